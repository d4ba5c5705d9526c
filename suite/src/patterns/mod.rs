//! Composable patterns over FP32 or FP64 device vectors that render HIP source: the seed's lazy views and eager
//! actions (Haidl, Steuwer et al., "Towards Composable GPU Programming: Programming GPUs with Eager Actions and Lazy
//! Views").
//!
//! A [`View`] is lazy: [`input`], [`zip`] and [`View::map`] only build an expression per element, and nothing runs.
//! A pattern that forces work ends a kernel: [`View::transform`] (an *action*) writes its result to a temporary
//! vector, so what follows reads that vector in a kernel of its own; [`View::reduce`] (an *algorithm*) ends the
//! program. The cost model is the seed's: every action and algorithm is one kernel, and every view fuses into the
//! kernel of the pattern that consumes it. So
//!
//! ```
//! use suite::patterns::{input, zip, Binary, Reduce, Unary};
//! let dot = zip(input(0), input(1)).map(Binary::Mul).reduce(Reduce::Add); // one kernel
//! let asum_eager = input(0).transform(Unary::Abs).reduce(Reduce::Add); // two kernels and a temporary
//! assert_eq!((dot.kernels(), asum_eager.kernels()), (1, 2));
//! ```
//!
//! [`Program::render`] writes one HIP source holding every kernel of the program. All kernels take the same
//! arguments, `(in0.., tmp0.., partials, done, result, n)`, so a launcher passes one list to each in turn. The
//! reduction is single-pass: each group reduces its grid-stride share into `partials[group]`, and the last group to
//! finish (counted with an atomic ticket in `done`, which it resets to 0 for the next launch) reduces the partials
//! into `result[0]`, so the result stays on the device and one launch is the whole reduction.
//!
//! The same source serves the generic kernel and its run-time specialisation ("multi-staging"): compiled with
//! `-DFUSION_N=<n> -DFUSION_GROUPS=<groups> -DFUSION_ITEMS=<elements per item>` ([`Program::stage_defines`]) the
//! loop over each item's elements has a constant trip count and the bounds test folds away when `n` divides evenly,
//! which is what the seed's PACXX `stage(size / glbSize)` does.
//!
//! A program's vectors are FP32 unless [`Program::with_element`] says FP64 ([`Precision`]): the same views, actions
//! and staging, rendered with `double` for `float` (and `fabs`, `fmax`, `0.0` for `fabsf`, `fmaxf`, `0.0f`). An FP64
//! source is named `<name>_f64_<hash>`, so its kernels, cache files and loaded modules never mix with FP32's; an
//! FP32 source is the same text, name and hash as before FP64 existed.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::precision::Precision;

/// Items per group of every generated kernel: a multiple of both wave sizes (32 and 64), large enough for a
/// reduction tree to amortise its barriers, small enough for eight groups per CU/SM.
pub const GROUP_SIZE: u32 = 256;

/// The C type of elements of `precision`.
fn c_type(precision: Precision) -> &'static str {
    match precision {
        Precision::F32 => "float",
        Precision::F64 => "double",
    }
}

/// A C math function for elements of `precision`: `fabsf`/`fabs`, `fmaxf`/`fmax` from the float name.
fn math(precision: Precision, float_name: &'static str) -> &'static str {
    match precision {
        Precision::F32 => float_name,
        Precision::F64 => float_name.strip_suffix('f').unwrap_or(float_name),
    }
}

/// An element-wise function of one value, from a fixed table (each renders as one C expression).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unary {
    /// `x`.
    Identity,
    /// `|x|`.
    Abs,
    /// `-x`.
    Negate,
    /// `x·x`.
    Square,
}

/// An element-wise function of two values (a zipped pair), from a fixed table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binary {
    /// `x·y`.
    Mul,
    /// `x + y`.
    Add,
    /// `x − y`.
    Sub,
    /// `max(x, y)`.
    Max,
}

/// A reduction's combining function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// Sum, identity 0.
    Add,
    /// Maximum, identity −∞.
    Max,
}

impl Unary {
    /// Every unary function, in table order.
    pub const ALL: [Unary; 4] = [Unary::Identity, Unary::Abs, Unary::Negate, Unary::Square];

    /// Name in generated comments and tests.
    pub fn name(self) -> &'static str {
        match self {
            Unary::Identity => "identity",
            Unary::Abs => "abs",
            Unary::Negate => "negate",
            Unary::Square => "square",
        }
    }

    /// The C expression applied to `x`, for elements of type `e`.
    fn render(self, x: &str, e: Precision) -> String {
        match self {
            Unary::Identity => x.to_string(),
            Unary::Abs => format!("{}({x})", math(e, "fabsf")),
            Unary::Negate => format!("(-{x})"),
            Unary::Square => format!("({x} * {x})"),
        }
    }

    /// The same function on the host, for references and tests.
    pub fn apply(self, x: f64) -> f64 {
        match self {
            Unary::Identity => x,
            Unary::Abs => x.abs(),
            Unary::Negate => -x,
            Unary::Square => x * x,
        }
    }
}

impl Binary {
    /// Every binary function, in table order.
    pub const ALL: [Binary; 4] = [Binary::Mul, Binary::Add, Binary::Sub, Binary::Max];

    /// Name in generated comments and tests.
    pub fn name(self) -> &'static str {
        match self {
            Binary::Mul => "mul",
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Max => "max",
        }
    }

    fn render(self, x: &str, y: &str, e: Precision) -> String {
        match self {
            Binary::Mul => format!("({x} * {y})"),
            Binary::Add => format!("({x} + {y})"),
            Binary::Sub => format!("({x} - {y})"),
            Binary::Max => format!("{}({x}, {y})", math(e, "fmaxf")),
        }
    }

    /// The same function on the host.
    pub fn apply(self, x: f64, y: f64) -> f64 {
        match self {
            Binary::Mul => x * y,
            Binary::Add => x + y,
            Binary::Sub => x - y,
            Binary::Max => x.max(y),
        }
    }
}

impl Reduce {
    /// Name in generated comments.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Add => "+",
            Reduce::Max => "max",
        }
    }

    fn identity(self, e: Precision) -> &'static str {
        match (self, e) {
            (Reduce::Add, Precision::F32) => "0.0f",
            (Reduce::Add, Precision::F64) => "0.0",
            (Reduce::Max, _) => "-INFINITY",
        }
    }

    fn render(self, a: &str, b: &str, e: Precision) -> String {
        match self {
            Reduce::Add => format!("{a} + {b}"),
            Reduce::Max => format!("{}({a}, {b})", math(e, "fmaxf")),
        }
    }
}

/// One element's value, as an expression over the inputs and earlier temporaries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Expr {
    /// `in<k>[i]`: the program's k-th input vector.
    Input(usize),
    /// `tmp<k>[i]`: the vector written by the program's k-th action.
    Temp(usize),
    /// A unary function of a view.
    Map(Unary, Box<Expr>),
    /// A binary function of a zipped pair of views.
    Zip(Binary, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// The C expression of the element at index `i` (a C expression itself), for elements of type `e`.
    fn render(&self, i: &str, e: Precision) -> String {
        match self {
            Expr::Input(k) => format!("in{k}[{i}]"),
            Expr::Temp(k) => format!("tmp{k}[{i}]"),
            Expr::Map(f, x) => f.render(&x.render(i, e), e),
            Expr::Zip(f, x, y) => f.render(&x.render(i, e), &y.render(i, e), e),
        }
    }

    fn describe(&self) -> String {
        match self {
            Expr::Input(k) => format!("in{k}"),
            Expr::Temp(k) => format!("tmp{k}"),
            Expr::Map(f, x) => format!("map({}, {})", f.name(), x.describe()),
            Expr::Zip(f, x, y) => format!("map({}, zip({}, {}))", f.name(), x.describe(), y.describe()),
        }
    }

    fn max_input(&self) -> Option<usize> {
        match self {
            Expr::Input(k) => Some(*k),
            Expr::Temp(_) => None,
            Expr::Map(_, x) => x.max_input(),
            Expr::Zip(_, x, y) => x.max_input().max(y.max_input()),
        }
    }

    /// The value on the host, from the element's inputs and temporaries.
    fn eval(&self, inputs: &[f64], temps: &[f64]) -> f64 {
        match self {
            Expr::Input(k) => inputs[*k],
            Expr::Temp(k) => temps[*k],
            Expr::Map(f, x) => f.apply(x.eval(inputs, temps)),
            Expr::Zip(f, x, y) => f.apply(x.eval(inputs, temps), y.eval(inputs, temps)),
        }
    }

    /// The value on the host as an unevaluated sum `hi + lo` in which the outermost operation is exact: a product
    /// or square through an FMA (`lo = fma(a, b, −a·b)`, TwoProduct), a sum or difference through TwoSum; abs,
    /// negation, identity and max are exact already (`lo = 0`). Operands nested deeper are rounded in f64 as the
    /// device rounds them (Ogita, Rump and Oishi, "Accurate Sum and Dot Product", SIAM J. Sci. Comput. 26(6), 2005,
    /// §3).
    fn eval_split(&self, inputs: &[f64], temps: &[f64]) -> (f64, f64) {
        let product = |a: f64, b: f64| {
            let p = a * b;
            (p, a.mul_add(b, -p))
        };
        match self {
            Expr::Map(Unary::Square, x) => {
                let a = x.eval(inputs, temps);
                product(a, a)
            }
            Expr::Zip(Binary::Mul, x, y) => product(x.eval(inputs, temps), y.eval(inputs, temps)),
            Expr::Zip(Binary::Add, x, y) => two_sum(x.eval(inputs, temps), y.eval(inputs, temps)),
            Expr::Zip(Binary::Sub, x, y) => two_sum(x.eval(inputs, temps), -y.eval(inputs, temps)),
            other => (other.eval(inputs, temps), 0.0),
        }
    }
}

/// TwoSum (Knuth): `s = fl(a + b)` and the exact error `e`, `s + e = a + b`, with no branch and no assumption on
/// the magnitudes (Ogita, Rump and Oishi 2005, Algorithm 3.1).
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let z = s - a;
    (s, (a - (s - z)) + (b - z))
}

/// A kernel of a program: an action writing a temporary, or the final reduction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Stage {
    /// `tmp<k>[i] = expr` for the stage's own k (its index among the transforms).
    Transform(Expr),
    /// `result[0] = reduce(op, expr)`.
    Reduce(Reduce, Expr),
}

/// A lazy view: an expression per element plus the actions that must run before it. Nothing runs until a
/// reduction ends the program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    stages: Vec<Stage>,
    expr: Expr,
}

/// A pair of views, element by element; [`Zipped::map`] combines each pair with a binary function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zipped(View, View);

/// The program's `k`-th input vector (a device buffer of `n` floats) as a view.
pub fn input(k: usize) -> View {
    View { stages: Vec::new(), expr: Expr::Input(k) }
}

/// Two views zipped element by element (lazy).
pub fn zip(a: View, b: View) -> Zipped {
    Zipped(a, b)
}

impl Zipped {
    /// `f(a[i], b[i])` (lazy). Actions that either side depends on run first, `a`'s before `b`'s.
    pub fn map(self, f: Binary) -> View {
        let Zipped(a, b) = self;
        let mut stages = a.stages;
        let shift = stages.iter().filter(|s| matches!(s, Stage::Transform(_))).count();
        let b_expr = shift_temps(b.expr, shift);
        stages.extend(b.stages.into_iter().map(|s| match s {
            Stage::Transform(e) => Stage::Transform(shift_temps(e, shift)),
            other => other,
        }));
        View { stages, expr: Expr::Zip(f, Box::new(a.expr), Box::new(b_expr)) }
    }
}

/// Renumbers the temporaries of a view appended after `shift` others.
fn shift_temps(e: Expr, shift: usize) -> Expr {
    match e {
        Expr::Temp(k) => Expr::Temp(k + shift),
        Expr::Input(k) => Expr::Input(k),
        Expr::Map(f, x) => Expr::Map(f, Box::new(shift_temps(*x, shift))),
        Expr::Zip(f, x, y) => Expr::Zip(f, Box::new(shift_temps(*x, shift)), Box::new(shift_temps(*y, shift))),
    }
}

impl View {
    /// `f(v[i])` (lazy: fuses into the kernel of whatever consumes it).
    pub fn map(self, f: Unary) -> View {
        View { stages: self.stages, expr: Expr::Map(f, Box::new(self.expr)) }
    }

    /// `f(v[i])` as an eager action: a kernel of its own writes the result to a temporary vector, and the view that
    /// follows reads it back (the seed's `gpu::action::transform`, Thrust's `transform` into a `device_vector`).
    pub fn transform(self, f: Unary) -> View {
        let mut stages = self.stages;
        let k = stages.iter().filter(|s| matches!(s, Stage::Transform(_))).count();
        stages.push(Stage::Transform(Expr::Map(f, Box::new(self.expr))));
        View { stages, expr: Expr::Temp(k) }
    }

    /// Reduces the view with `op` into one value: the algorithm that ends the program and its last kernel.
    pub fn reduce(self, op: Reduce) -> Program {
        let mut stages = self.stages;
        stages.push(Stage::Reduce(op, self.expr));
        Program { stages, element: Precision::F32 }
    }
}

/// A finished program: its actions' kernels, then one reduction kernel, over vectors of one [`Precision`] type (FP32
/// unless [`Program::with_element`] says otherwise).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Program {
    stages: Vec<Stage>,
    element: Precision,
}

/// A program's HIP source and its kernels' symbols, in launch order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// Source name: the program's name and a hash of its text, e.g. `fusion_dot_1a2b3c4d`, unique to the text, so
    /// loaded modules and cache files never mix two programs up.
    pub name: String,
    /// `<name>.hip`.
    pub file_name: String,
    /// The HIP C++ text.
    pub text: String,
    /// Kernel symbols in launch order: one per action, then the reduction.
    pub kernels: Vec<String>,
}

impl Rendered {
    /// The source as the kernel pipeline takes it.
    pub fn source(&self) -> crate::code_objects::Source<'_> {
        crate::code_objects::Source { name: &self.name, file_name: &self.file_name, text: &self.text }
    }
}

/// Geometry of one launch of a program over `n` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Elements.
    pub n: u32,
    /// Groups of [`GROUP_SIZE`] items.
    pub groups: u32,
    /// Elements each item handles at most: ceil(n / (groups · GROUP_SIZE)).
    pub items: u32,
}

impl Geometry {
    /// Enough groups to fill the device (`resident_groups`, e.g. CUs × groups per CU) and no more than one element
    /// per item needs; `None` when `n` is 0 or a grid-stride index could pass 2^32 (n + 4·groups·GROUP_SIZE must
    /// fit a u32: the generic loop looks four strides ahead).
    pub fn for_elements(n: u64, resident_groups: u32) -> Option<Geometry> {
        if n == 0 || resident_groups == 0 {
            return None;
        }
        let group = u64::from(GROUP_SIZE);
        let groups = n.div_ceil(group).min(u64::from(resident_groups));
        let threads = groups * group;
        if n.checked_add(4 * threads)? > u64::from(u32::MAX) {
            return None;
        }
        Some(Geometry { n: n as u32, groups: groups as u32, items: n.div_ceil(threads) as u32 })
    }

    /// A bound on the longest chain of FP32 additions any element goes through in a generated (or the
    /// hand-written) reduction with this geometry: at most `items − 1` sequential adds in its item (the generic
    /// kernel's four accumulators make it shorter, plus 2 to join them), log2(GROUP_SIZE) in the group's tree, then
    /// in the last group ceil(groups / GROUP_SIZE) − 1 sequential adds and the tree again, plus one.
    pub fn addition_depth(&self) -> u64 {
        let tree = u64::from(GROUP_SIZE.ilog2());
        u64::from(self.items) + 2 + 2 * tree + u64::from(self.groups.div_ceil(GROUP_SIZE))
    }
}

impl Program {
    /// The same program over vectors of `element`.
    pub fn with_element(self, element: Precision) -> Program {
        Program { element, ..self }
    }

    /// The element type of the program's vectors.
    pub fn element(&self) -> Precision {
        self.element
    }

    /// Kernels the program launches: one per action plus the reduction.
    pub fn kernels(&self) -> usize {
        self.stages.len()
    }

    /// Temporary vectors of `n` elements the program needs (one per action).
    pub fn temporaries(&self) -> usize {
        self.stages.len() - 1
    }

    /// Input vectors the program reads.
    pub fn inputs(&self) -> usize {
        self.stages
            .iter()
            .filter_map(|s| match s {
                Stage::Transform(e) | Stage::Reduce(_, e) => e.max_input(),
            })
            .max()
            .map_or(0, |k| k + 1)
    }

    /// The seed's notation, e.g. `reduce(+, map(mul, zip(in0, in1)))`, one line per kernel.
    pub fn describe(&self) -> String {
        let mut t = 0;
        self.stages
            .iter()
            .map(|s| match s {
                Stage::Transform(e) => {
                    t += 1;
                    format!("tmp{} = {}", t - 1, e.describe())
                }
                Stage::Reduce(op, e) => format!("reduce({}, {})", op.name(), e.describe()),
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The program's value on the host, element by element in order, with the sum of the absolute values of the
    /// reduced terms (the scale of the rounding error of a reordered sum on the device): `(value, Σ|term|)`.
    /// `inputs[k]` is input k; all have the same length. Temporaries are rounded to the program's element type, as
    /// the device stores them.
    ///
    /// FP32 programs: the terms of FP32 inputs (x, |x|, x·y) are exact in f64 and summed in f64, whose own error
    /// (at most γₙ of f64 times Σ|tᵢ|, 4·10⁻⁹ at n = 2^25) is 2000 times below the FP32 tolerance. FP64 programs:
    /// a plain f64 sum would err as much as the device, so the terms are split exactly ([`Expr::eval_split`]) and
    /// summed by Sum2/Dot2 (TwoSum into a running sum, the errors into a second one; Ogita, Rump and Oishi 2005,
    /// Algorithms 4.4 and 5.3), which is as accurate as summing in twice the working precision and rounding once:
    /// the value is within [`Program::reference_error`]·Σ|tᵢ| of the exact sum of the terms.
    pub fn reference<T: Copy + Into<f64>>(&self, inputs: &[&[T]]) -> (f64, f64) {
        let n = inputs.first().map_or(0, |x| x.len());
        let Some(Stage::Reduce(op, last)) = self.stages.last() else { return (f64::NAN, f64::NAN) };
        let (mut acc, mut abs) = (if *op == Reduce::Add { 0.0 } else { f64::NEG_INFINITY }, 0.0);
        // Sum2/Dot2's second sum: the exact errors of the running sum's additions and of the terms.
        let mut errors = 0.0;
        let mut ins = vec![0.0; inputs.len()];
        let mut temps = vec![0.0; self.temporaries()];
        for i in 0..n {
            for (v, x) in ins.iter_mut().zip(inputs) {
                *v = x[i].into();
            }
            let mut k = 0;
            for s in &self.stages[..self.stages.len() - 1] {
                if let Stage::Transform(e) = s {
                    let value = e.eval(&ins, &temps);
                    // The device stores each temporary in the program's element type.
                    temps[k] = if self.element == Precision::F32 { f64::from(value as f32) } else { value };
                    k += 1;
                }
            }
            match (op, self.element) {
                (Reduce::Max, _) => {
                    let t = last.eval(&ins, &temps);
                    abs += t.abs();
                    acc = acc.max(t);
                }
                (Reduce::Add, Precision::F32) => {
                    let t = last.eval(&ins, &temps);
                    abs += t.abs();
                    acc += t;
                }
                (Reduce::Add, Precision::F64) => {
                    let (t, t_error) = last.eval_split(&ins, &temps);
                    abs += t.abs();
                    let (sum, sum_error) = two_sum(acc, t);
                    acc = sum;
                    errors += sum_error + t_error;
                }
            }
        }
        (acc + errors, abs)
    }

    /// A bound on the error of [`Program::reference`] over `n` elements, relative to Σ|tᵢ|: 0 for FP32 programs
    /// (their f64 sum's error is 2000 times below any FP32 tolerance, and leaving it out keeps the FP32 tolerance
    /// as it was); for FP64, u + γ²₂ₙ with u = 2⁻⁵³, γₖ = k·u/(1 − k·u): Dot2's bound u·|S| + γ²ₙ·Σ|xᵢyᵢ| (Ogita,
    /// Rump and Oishi 2005, Theorem 5.3: the final rounding, and the second sum's own error), taken over the 2n
    /// values it sums (n terms and their n exact errors) and with |S| ≤ Σ|tᵢ|: 1.7·10⁻¹⁶ at n = 2^25.
    pub fn reference_error(&self, n: u64) -> f64 {
        match self.element {
            Precision::F32 => 0.0,
            Precision::F64 => {
                let u = Precision::F64.unit_roundoff();
                let k = 2.0 * n as f64 * u;
                let gamma = k / (1.0 - k);
                u + gamma * gamma
            }
        }
    }

    /// The `-D` defines that specialise the program's kernels for one geometry (multi-staging).
    pub fn stage_defines(geometry: &Geometry) -> Vec<String> {
        vec![
            format!("FUSION_N={}u", geometry.n),
            format!("FUSION_GROUPS={}u", geometry.groups),
            format!("FUSION_ITEMS={}u", geometry.items),
        ]
    }

    /// The program's HIP source, named `<name>_<hash>` (FP32) or `<name>_f64_<hash>` (FP64); `name` must be a C
    /// identifier.
    pub fn render(&self, name: &str) -> Rendered {
        let inputs = self.inputs();
        let temps = self.temporaries();
        let (element, ty) = (self.element, c_type(self.element));
        let mut params: Vec<String> = (0..inputs).map(|k| format!("const {ty}* __restrict__ in{k}")).collect();
        params.extend((0..temps).map(|k| format!("{ty}* __restrict__ tmp{k}")));
        params.extend([
            format!("{ty}* __restrict__ partials"),
            "unsigned* __restrict__ done".to_string(),
            format!("{ty}* __restrict__ result"),
            "unsigned n".to_string(),
        ]);
        let params = params.join(", ");
        let mut body = String::new();
        let mut symbols = Vec::new();
        let mut t = 0;
        for (s, stage) in self.stages.iter().enumerate() {
            let symbol = format!("{name}_k{s}");
            match stage {
                Stage::Transform(e) => {
                    let _ = write!(
                        body,
                        "\n// Action {s}: tmp{t} = {}: its own kernel, writing a temporary.\n\
                         extern \"C\" GPU_KERNEL void {symbol}({params}) {{\n\
                         \x20   FUSION_FOR_EACH(i) {{ tmp{t}[i] = {}; }}\n}}\n",
                        e.describe(),
                        e.render("i", element),
                    );
                    t += 1;
                }
                Stage::Reduce(op, e) => {
                    let combine = op.render("a", "b", element);
                    let _ = write!(
                        body,
                        "\n// Reduction: reduce({}, {}): the view fused into the reduction's loads.\n\
                         __device__ inline {ty} {symbol}_combine({ty} a, {ty} b) {{ return {combine}; }}\n\
                         extern \"C\" GPU_KERNEL void {symbol}({params}) {{\n\
                         \x20   {ty} acc = {id};\n\
                         #if defined(FUSION_N)\n\
                         \x20   FUSION_FOR_EACH(i) {{ acc = {symbol}_combine(acc, {value}); }}\n\
                         #else\n\
                         \x20   // Generic: four elements per trip, loaded before any is combined, so four loads are in\n\
                         \x20   // flight per item whatever n is; then the remainder one by one. The host keeps\n\
                         \x20   // n + 4 * stride within 32 bits.\n\
                         \x20   const unsigned stride = gridDim.x * FUSION_GROUP;\n\
                         \x20   unsigned i = blockIdx.x * FUSION_GROUP + threadIdx.x;\n\
                         \x20   {ty} acc1 = {id}, acc2 = {id}, acc3 = {id};\n\
                         \x20   for (; i + 3u * stride < n; i += 4u * stride) {{\n\
                         \x20       const {ty} v0 = {v0}, v1 = {v1}, v2 = {v2}, v3 = {v3};\n\
                         \x20       acc = {symbol}_combine(acc, v0);\n\
                         \x20       acc1 = {symbol}_combine(acc1, v1);\n\
                         \x20       acc2 = {symbol}_combine(acc2, v2);\n\
                         \x20       acc3 = {symbol}_combine(acc3, v3);\n\
                         \x20   }}\n\
                         \x20   for (; i < n; i += stride) acc = {symbol}_combine(acc, {value});\n\
                         \x20   acc = {symbol}_combine({symbol}_combine(acc, acc1), {symbol}_combine(acc2, acc3));\n\
                         #endif\n\
                         \x20   fusion_finish(acc, {id}, {symbol}_combine, partials, done, result);\n}}\n",
                        op.name(),
                        e.describe(),
                        id = op.identity(element),
                        value = e.render("i", element),
                        v0 = e.render("i", element),
                        v1 = e.render("i + stride", element),
                        v2 = e.render("i + 2u * stride", element),
                        v3 = e.render("i + 3u * stride", element),
                    );
                }
            }
            symbols.push(symbol);
        }
        // FP32 writes exactly the text it wrote before FP64 existed (same hash, same cache entries); FP64 says
        // what it is on the first line and takes `double` wherever FP32 has `float`.
        let over = if element == Precision::F32 { String::new() } else { format!(", over FP64 ({ty}) vectors") };
        let text = format!(
            "// Generated by suite::patterns from: {}{over}\n// One kernel per action and one for the reduction; views fuse \
             into the kernel that consumes them.\n#include \"gpu.h\"\n{}{body}",
            self.describe(),
            PRELUDE.replace(PRELUDE_ELEMENT, ty),
        );
        let hash: String = Sha256::digest(text.as_bytes()).iter().take(4).map(|b| format!("{b:02x}")).collect();
        let unique = match element {
            Precision::F32 => format!("{name}_{hash}"),
            other => format!("{name}_{}_{hash}", other.name()),
        };
        // The symbols carry the hash too, so two programs never export the same name.
        let text = text.replace(&format!("{name}_k"), &format!("{unique}_k"));
        let kernels = symbols.iter().map(|s| s.replacen(name, &unique, 1)).collect();
        Rendered { file_name: format!("{unique}.hip"), name: unique, text, kernels }
    }
}

/// The token in [`PRELUDE`] that stands for the element type (`float` or `double`).
const PRELUDE_ELEMENT: &str = "ELEMENT_T";

/// The loop and the reduction tail every generated kernel shares, over elements of type [`PRELUDE_ELEMENT`].
/// Generic: a grid-stride loop with a run-time bound. Staged (`FUSION_N` defined): a loop with a constant trip count
/// `FUSION_ITEMS` over a constant stride, whose bounds test folds away when `FUSION_N` is a multiple of the grid's
/// items; the compiler unrolls it and issues the loads together.
const PRELUDE: &str = r#"
#define FUSION_GROUP 256u
#if defined(FUSION_N)
#define FUSION_FOR_EACH(i)                                                                                  \
    _Pragma("unroll") for (unsigned fusion_k = 0; fusion_k < FUSION_ITEMS; ++fusion_k)                     \
        for (unsigned i = blockIdx.x * FUSION_GROUP + threadIdx.x + fusion_k * (FUSION_GROUPS * FUSION_GROUP), \
                      fusion_once = 1u;                                                                   \
             fusion_once && (FUSION_N % (FUSION_GROUPS * FUSION_GROUP) == 0u || i < FUSION_N); fusion_once = 0u)
#else
#define FUSION_FOR_EACH(i) for (unsigned i = blockIdx.x * FUSION_GROUP + threadIdx.x; i < n; i += gridDim.x * FUSION_GROUP)
#endif

// Sum (or max) of one value per item over the group, valid in item 0: shuffles within each wave, then the waves'
// values through LDS. GPU_WAVE_SIZE is 32 or 64 as the architecture has it.
template <typename F> __device__ inline ELEMENT_T fusion_group_reduce(ELEMENT_T v, ELEMENT_T identity, F combine) {
    __shared__ ELEMENT_T waves[FUSION_GROUP / GPU_WAVE_SIZE];
    for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v = combine(v, __shfl_down(v, d));
    const unsigned lane = threadIdx.x % GPU_WAVE_SIZE, wave = threadIdx.x / GPU_WAVE_SIZE;
    if (lane == 0) waves[wave] = v;
    __syncthreads();
    v = threadIdx.x < FUSION_GROUP / GPU_WAVE_SIZE ? waves[threadIdx.x] : identity;
    if (wave == 0)
        for (int d = GPU_WAVE_SIZE / 2; d > 0; d /= 2) v = combine(v, __shfl_down(v, d));
    __syncthreads();  // `waves` is reused by the next call
    return v;
}

// Single-pass finish: each group writes its partial; the last group to take a ticket reduces all partials into
// result[0] and resets the ticket for the next launch. The fence makes a group's partial visible device-wide
// before its ticket is counted, so the last group reads every partial.
template <typename F>
__device__ inline void fusion_finish(ELEMENT_T acc, ELEMENT_T identity, F combine, ELEMENT_T* partials, unsigned* done,
                                     ELEMENT_T* result) {
    __shared__ bool last;
    acc = fusion_group_reduce(acc, identity, combine);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = acc;
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    ELEMENT_T v = identity;
    for (unsigned g = threadIdx.x; g < gridDim.x; g += FUSION_GROUP) v = combine(v, ((volatile ELEMENT_T*)partials)[g]);
    v = fusion_group_reduce(v, identity, combine);
    if (threadIdx.x == 0) {
        result[0] = v;
        *done = 0u;
    }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn programs() -> Vec<(&'static str, Program)> {
        vec![
            ("sum", input(0).reduce(Reduce::Add)),
            ("dot", zip(input(0), input(1)).map(Binary::Mul).reduce(Reduce::Add)),
            ("asum", input(0).map(Unary::Abs).reduce(Reduce::Add)),
            ("dot_eager", zip(input(0), input(1)).map(Binary::Mul).transform(Unary::Identity).reduce(Reduce::Add)),
            ("asum_eager", input(0).transform(Unary::Abs).reduce(Reduce::Add)),
            (
                "max_sq",
                zip(input(0).transform(Unary::Square), input(1).transform(Unary::Abs))
                    .map(Binary::Max)
                    .reduce(Reduce::Max),
            ),
        ]
    }

    #[test]
    fn views_fuse_and_actions_make_kernels() {
        let counts: Vec<(usize, usize, usize)> =
            programs().iter().map(|(_, p)| (p.kernels(), p.temporaries(), p.inputs())).collect();
        assert_eq!(counts, vec![(1, 0, 1), (1, 0, 2), (1, 0, 1), (2, 1, 2), (2, 1, 1), (3, 2, 2)]);
        assert_eq!(programs()[1].1.describe(), "reduce(+, map(mul, zip(in0, in1)))");
        assert_eq!(
            programs()[5].1.describe(),
            "tmp0 = map(square, in0); tmp1 = map(abs, in1); reduce(max, map(max, zip(tmp0, tmp1)))"
        );
    }

    #[test]
    fn rendering_names_kernels_uniquely_and_fuses_the_view_into_the_loads() {
        let dot = programs()[1].1.render("fusion_dot");
        assert!(dot.name.starts_with("fusion_dot_") && dot.name.len() == "fusion_dot_".len() + 8, "{}", dot.name);
        assert_eq!(dot.kernels, vec![format!("{}_k0", dot.name)]);
        assert!(dot.text.contains("(in0[i] * in1[i])"), "{}", dot.text);
        assert!(dot.text.contains(&format!("extern \"C\" GPU_KERNEL void {}_k0(", dot.name)));
        let eager = programs()[3].1.render("fusion_dot");
        assert_ne!(eager.name, dot.name);
        assert!(
            eager.text.contains("tmp0[i] = (in0[i] * in1[i])") && eager.text.contains("tmp0[i]);"),
            "{}",
            eager.text
        );
        // Same program, same text and name: the cache and the loaded-module table can key on it.
        assert_eq!(programs()[1].1.render("fusion_dot"), dot);
    }

    /// FP32 sources are the text they were before FP64 existed, byte for byte (the same hash, so kernel caches and
    /// fingerprints of earlier runs stay valid); FP64 sources take `double` throughout and a name of their own.
    #[test]
    fn fp32_sources_are_unchanged_and_fp64_sources_are_named_apart() {
        let names: Vec<String> = programs().iter().map(|(n, p)| p.render(&format!("fusion_{n}")).name).collect();
        assert_eq!(
            names,
            [
                "fusion_sum_8924cab9",
                "fusion_dot_ded59f7b",
                "fusion_asum_2ad4f2c9",
                "fusion_dot_eager_10d4f8c7",
                "fusion_asum_eager_6f24843a",
                "fusion_max_sq_084ac7c7"
            ]
        );
        for (name, program) in programs() {
            let f32 = program.render(&format!("fusion_{name}"));
            let f64 = program.clone().with_element(Precision::F64).render(&format!("fusion_{name}"));
            assert_eq!(program.element(), Precision::F32);
            assert!(f64.name.starts_with(&format!("fusion_{name}_f64_")), "{}", f64.name);
            assert_ne!(f64.name, f32.name);
            assert!(f64.kernels.iter().all(|k| k.starts_with(&f64.name)), "{:?}", f64.kernels);
            assert!(!f64.text.contains("float") && !f64.text.contains("fabsf") && !f64.text.contains("0.0f"));
            assert!(!f32.text.contains("double") && !f32.text.contains("ELEMENT_T"), "{name}");
            assert!(f64.text.contains("const double* __restrict__ in0") && f64.text.contains("double acc ="));
            // Only the element type differs: the same text with `float` (and its math) for `double`.
            let back = f64
                .text
                .replace(&f64.name, &f32.name)
                .replace(", over FP64 (double) vectors", "")
                .replace("double", "float")
                .replace("fabs(", "fabsf(")
                .replace("fmax(", "fmaxf(")
                .replace(" 0.0", " 0.0f");
            assert_eq!(back, f32.text, "{name}");
        }
    }

    /// FP64 programs are summed on the host by Sum2/Dot2: a sum or dot whose naive f64 evaluation loses everything
    /// comes out exact, where the plain f64 sum of FP32 programs does not (and need not: FP32 terms are exact).
    #[test]
    fn the_fp64_reference_is_compensated() {
        let p = programs();
        let f64_of = |i: usize| p[i].1.clone().with_element(Precision::F64);
        // 1e16 + 1 − 1e16: naive f64 gives 0.
        let x = [1e16, 1.0, -1e16];
        assert_eq!(p[0].1.reference(&[&x]).0, 0.0);
        assert_eq!(f64_of(0).reference(&[&x]), (1.0, 2e16 + 1.0));
        // a = 1 + 2^-30: a·a − (1 + 2^-29) = 2^-60 exactly, but fl(a·a) = 1 + 2^-29, so naive f64 gives 0.
        let a = 1.0 + 2f64.powi(-30);
        let (x, y) = ([a, -1.0], [a, 1.0 + 2f64.powi(-29)]);
        assert_eq!(p[1].1.reference(&[&x, &y]).0, 0.0);
        assert_eq!(f64_of(1).reference(&[&x, &y]).0, 2f64.powi(-60));
        // The eager FP64 dot stores its products in a temporary, rounded as the device stores it: 0 again.
        assert_eq!(f64_of(3).reference(&[&x, &y]).0, 0.0);
        // Max rounds nothing.
        assert_eq!(f64_of(5).reference(&[&[1.0, -3.0], &[0.5, 2.0]]).0, 9.0);
        // The bound: u + γ²₂ₙ, u = 2^-53; FP32 programs add none.
        let u = f64::EPSILON / 2.0;
        assert_eq!(p[1].1.reference_error(1 << 25), 0.0);
        let e = f64_of(1).reference_error(1 << 25);
        assert!(e > u && e < 1.6 * u, "{e:e}");
        assert!(f64_of(1).reference_error(1 << 40) > 2.0 * u);
    }

    #[test]
    fn the_host_reference_follows_the_program() {
        let x = [1.0f32, -2.0, 3.0];
        let y = [4.0f32, 5.0, -6.0];
        let p = programs();
        assert_eq!(p[0].1.reference(&[&x]), (2.0, 6.0));
        assert_eq!(p[1].1.reference(&[&x, &y]), (4.0 - 10.0 - 18.0, 32.0));
        assert_eq!(p[2].1.reference(&[&x]), (6.0, 6.0));
        assert_eq!(p[4].1.reference(&[&x]), (6.0, 6.0));
        assert_eq!(p[5].1.reference(&[&x, &y]).0, 9.0);
    }

    /// The CI check that generated kernels build: a fused, an eager (two-kernel) and a max program, in FP32 and
    /// FP64, generic and staged, through the kernel store's one compile-and-cache path, for gfx90a and sm_90. The
    /// object must hold the rendered symbols, and asking again must hit the cache.
    fn generated_programs_compile(arch_name: &str, platform: crate::device::Platform) {
        use crate::code_objects::{cubin_kernel_names, KernelStore, Origin};
        let compiler = crate::code_objects::test_support::compiler(platform);
        let cache = tempfile::tempdir().unwrap();
        let store = KernelStore::with_cache_dir(None, cache.path().to_path_buf()).with_compiler(compiler);
        let arch = crate::device::Arch::parse(arch_name).unwrap();
        let geometry = Geometry::for_elements((1 << 20) + 1, 1056).unwrap();
        let chosen = [&programs()[1], &programs()[3], &programs()[5]];
        let both = chosen.iter().flat_map(|(name, p)| Precision::ALL.map(|e| (name, p.clone().with_element(e))));
        for (name, program) in both {
            let rendered = program.render(&format!("fusion_{name}"));
            for defines in [Vec::new(), Program::stage_defines(&geometry)] {
                let object = store.specialised(&rendered.source(), &arch, &defines).unwrap_or_else(|e| panic!("{e}"));
                assert!(matches!(object.origin, Origin::Compiled(_)), "{name} {defines:?}: {}", object.origin);
                let mut names = match platform {
                    crate::device::Platform::Nvidia => cubin_kernel_names(&object.bytes).unwrap(),
                    crate::device::Platform::Amd => object.info.amd_kernels.iter().map(|k| k.name.clone()).collect(),
                };
                names.sort();
                assert_eq!(names, rendered.kernels, "{name} {defines:?}");
                let again = store.specialised(&rendered.source(), &arch, &defines).unwrap();
                assert!(matches!(again.origin, Origin::Cached(_)), "{name}: {}", again.origin);
            }
        }
    }

    #[test]
    fn generated_programs_compile_for_gfx90a() {
        generated_programs_compile("gfx90a", crate::device::Platform::Amd);
    }

    #[test]
    fn generated_programs_compile_for_sm_90() {
        generated_programs_compile("sm_90", crate::device::Platform::Nvidia);
    }

    #[test]
    fn geometry_fills_the_device_and_refuses_what_would_wrap() {
        let g = Geometry::for_elements(1 << 25, 1056).unwrap();
        assert_eq!((g.groups, g.items), (1056, 125));
        assert!(u64::from(g.groups) * u64::from(GROUP_SIZE) * u64::from(g.items) >= 1 << 25);
        let small = Geometry::for_elements((1 << 20) + 1, 100_000).unwrap();
        assert_eq!((small.groups, small.items), (4097, 1));
        assert_eq!(Geometry::for_elements(0, 1056), None);
        assert_eq!(Geometry::for_elements(u64::from(u32::MAX), 1056), None);
        assert!(Geometry::for_elements(u64::from(u32::MAX) - 4 * 1056 * 256, 1056).is_some());
        assert_eq!(Geometry::for_elements(u64::from(u32::MAX) - 4 * 1056 * 256 + 1, 1056), None);
        assert_eq!(Program::stage_defines(&g), vec!["FUSION_N=33554432u", "FUSION_GROUPS=1056u", "FUSION_ITEMS=125u"]);
        assert_eq!(g.addition_depth(), 125 + 2 + 16 + 5);
    }
}
