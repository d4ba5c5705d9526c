//! PNG line plots: the experiments build a [`LinePlot`] (data in), [`render_png`] writes the image (PNG out).
//!
//! How: plotters draws the grid, lines and markers into an RGB bitmap in memory at twice the size, which is then
//! averaged down (2x2 supersampling: smooth lines, since plotters' bitmap backend does not anti-alias). Text is
//! drawn afterwards at the final size with the bundled DejaVu Sans (`suite/assets/DejaVuSans.ttf`) through
//! `ab_glyph`, so plotting needs neither fontconfig nor a system font (compute nodes often have neither). We lay
//! the text out ourselves because plotters 0.3.7's `ab_glyph` text drops each glyph's side bearing (uneven
//! letter spacing) and sets labels about a quarter of an em too high. The bitmap is encoded with `png`, so the
//! same plot gives the same bytes and a failed write names the file.
//!
//! Layout, top to bottom: title and subtitle (centred), then the chart with the legend in its own column to the
//! right of the plotting area (never over the data; it grows a second column when the series do not fit in one;
//! a legend wider than 30% of the image goes under the chart instead), then the note (left-aligned, grey). Long
//! titles and notes wrap.
//!
//! So that a person can read every plot: series with identical points are merged into one labelled with both
//! names, and a line that a later one covers along part of its length is drawn wider so it shows around it
//! ([`normalised`], [`hidden_series`]); a plot whose series all sit at one x is drawn as bars, one per series,
//! labelled under them ([`single_x`]); a series may carry error bars ([`Series::spread`]); a plot may group its
//! own legend (a marker per experiment, a colour per family: [`LinePlot::legend`]) and label chosen points
//! ([`LinePlot::labels`]); a log axis over a few decades is labelled densely enough to read a value between two
//! labels.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

/// The font compiled into the binary; see `suite/assets/README.md` for its license.
const FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
/// Supersampling factor of the shapes layer: drawn at this multiple of the size, then averaged down.
const SS: u32 = 2;

/// A size that suits a full-width figure in a report, in pixels (width, height).
pub const DEFAULT_SIZE: (u32, u32) = (1600, 1000);
/// The smallest image [`render_png`] accepts, in pixels (width, height).
pub const MIN_SIZE: (u32, u32) = (320, 240);
/// The largest image [`render_png`] accepts, in pixels (width, height); it is drawn at twice this size first.
pub const MAX_SIZE: (u32, u32) = (8192, 8192);

/// Why a plot could not be written. Every variant names the PNG file it was for.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plot has no series at all.
    #[error("plot {path}: nothing to draw: the plot has no series")]
    NoSeries {
        /// The PNG that was to be written.
        path: PathBuf,
    },
    /// A series has no point that can be drawn.
    #[error(
        "plot {path}: series \"{label}\" has no point that can be drawn ({given} given; NaN and infinite values \
         are skipped, and so are values <= 0 on a log axis)"
    )]
    EmptySeries {
        /// The PNG that was to be written.
        path: PathBuf,
        /// The series' legend label.
        label: String,
        /// How many points the series had before skipping.
        given: usize,
    },
    /// The requested image size is out of range, or too small for what the plot holds.
    #[error("plot {path}: image size {width}x{height} px: {problem}")]
    Size {
        /// The PNG that was to be written.
        path: PathBuf,
        /// Requested width in pixels.
        width: u32,
        /// Requested height in pixels.
        height: u32,
        /// What is wrong and what to change.
        problem: String,
    },
    /// The values on one axis span more than an `f64` can hold.
    #[error("plot {path}: the {axis} values run from {lo:e} to {hi:e}, a span too wide to draw; use a log axis")]
    Range {
        /// The PNG that was to be written.
        path: PathBuf,
        /// "x" or "y".
        axis: &'static str,
        /// Smallest value.
        lo: f64,
        /// Largest value.
        hi: f64,
    },
    /// The bundled font could not be loaded.
    #[error("plot {path}: the bundled font suite/assets/DejaVuSans.ttf could not be parsed: {message}")]
    Font {
        /// The PNG that was to be written.
        path: PathBuf,
        /// ab_glyph's error.
        message: String,
    },
    /// plotters failed while drawing into the in-memory image.
    #[error("plot {path}: drawing the {step} failed: {message}")]
    Draw {
        /// The PNG that was to be written.
        path: PathBuf,
        /// Which part of the plot was being drawn.
        step: &'static str,
        /// plotters' error, as text (its error type is generic over the backend).
        message: String,
    },
    /// The PNG encoder failed.
    #[error("plot {path}: encoding the PNG failed: {source}")]
    Encode {
        /// The PNG that was to be written.
        path: PathBuf,
        /// The encoder's error.
        source: png::EncodingError,
    },
    /// The PNG could not be written to disk.
    #[error("plot {path}: cannot write the PNG file: {source}")]
    Write {
        /// The PNG that was to be written.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeriesKind {
    /// A measured series: solid line in the next palette colour, its points marked (see [`Marker`]).
    Line,
    /// Measured points with no line between them (e.g. kernels on a roofline): markers only, taking the palette
    /// colours and marker shapes in turn with the lines.
    Points,
    /// Measured points drawn as hollow rings, larger than [`SeriesKind::Points`] and over them: a second run's
    /// points that fall where the first run's do stay visible around them (e.g. two runs on one roofline).
    Rings,
    /// A reference to compare against (the vendor BLAS, a hardware peak): dashed, thicker, in black or grey,
    /// drawn on top of the measured lines.
    Reference,
    /// What the plot is about (e.g. the theoretical occupancy that the measured lines are read against): drawn
    /// last, over every other series, in its own colour ([`FOCUS`], in no palette), thicker than a line and
    /// dashed, so it is never hidden and a series with the same values still shows through its gaps.
    Focus,
    /// Points to be read with care (measured while the GPU was throttled or below its steady clock): a thick hollow
    /// ring in its own colour ([`FLAGGED`], in no palette) around each, larger than every other marker and drawn
    /// last, over everything, so the point inside stays visible. It takes no palette colour, so adding it changes
    /// no other series' colour.
    Flagged,
}

/// One line of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text, e.g. `"tiled M=16"` or `"cuBLAS"`.
    pub label: String,
    /// (x, y) in the units of the axis labels. Drawn in order of x; NaN and infinite values (and values <= 0 on a
    /// log axis) are skipped.
    pub points: Vec<(f64, f64)>,
    /// How the series is drawn.
    pub kind: SeriesKind,
    /// The spread behind plotted values, drawn as error bars: (x, low, high) in the axes' units, e.g. the rate at
    /// the slowest and at the fastest repetition of a point whose median is plotted. Empty: no bars.
    pub spread: Vec<(f64, f64, f64)>,
    /// A colour and marker the plot chooses (a legend grouped by experiment and family, [`LinePlot::legend`])
    /// instead of the next palette entry.
    pub style: Option<Style>,
}

/// A colour and marker chosen by the plot for a measured series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// The colour.
    pub color: RGBColor,
    /// The marker's shape.
    pub marker: Marker,
    /// Drawn as an outline rather than filled (e.g. FP64 beside FP32's filled markers).
    pub hollow: bool,
}

impl Series {
    fn of(label: impl Into<String>, points: Vec<(f64, f64)>, kind: SeriesKind) -> Self {
        Self { label: label.into(), points, kind, spread: Vec::new(), style: None }
    }

    /// A measured series ([`SeriesKind::Line`]).
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Line)
    }

    /// A reference series ([`SeriesKind::Reference`]).
    pub fn reference(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Reference)
    }

    /// Points without a line ([`SeriesKind::Points`]).
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Points)
    }

    /// Points drawn as rings ([`SeriesKind::Rings`]).
    pub fn rings(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Rings)
    }

    /// The series the plot is about ([`SeriesKind::Focus`]).
    pub fn focus(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Focus)
    }

    /// Rings around points to be read with care ([`SeriesKind::Flagged`]).
    pub fn flagged(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, SeriesKind::Flagged)
    }

    /// A series of `kind`.
    pub fn of_kind(kind: SeriesKind, label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self::of(label, points, kind)
    }

    /// The same series with error bars (see [`Series::spread`]).
    pub fn with_spread(mut self, spread: Vec<(f64, f64, f64)>) -> Self {
        self.spread = spread;
        self
    }

    /// The same series in a colour and marker of the plot's choosing (see [`Series::style`]).
    pub fn styled(mut self, style: Style) -> Self {
        self.style = Some(style);
        self
    }

    /// Whether the series is measured data (a line, points, rings, or the series the plot is about), as opposed to
    /// a reference line or rings flagging other points.
    pub fn is_measured(&self) -> bool {
        matches!(self.kind, SeriesKind::Line | SeriesKind::Points | SeriesKind::Rings | SeriesKind::Focus)
    }
}

/// One entry of a legend the plot groups itself ([`LinePlot::legend`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    /// The text.
    pub label: String,
    /// What is drawn beside it.
    pub sample: LegendSample,
}

/// What a grouped legend's entry shows beside its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegendSample {
    /// Nothing: a heading over the entries below it (e.g. an experiment, or "FP64: hollow").
    Heading,
    /// A marker (the series of the plot that carry this style).
    Marker(Style),
    /// The sample of the series with this entry's label (its line, dashes or marker), listed in the group.
    Series,
}

impl LegendEntry {
    /// A heading.
    pub fn heading(label: impl Into<String>) -> Self {
        Self { label: label.into(), sample: LegendSample::Heading }
    }

    /// An entry with its marker.
    pub fn marker(label: impl Into<String>, style: Style) -> Self {
        Self { label: label.into(), sample: LegendSample::Marker(style) }
    }

    /// The entry of the plot's series labelled `label`.
    pub fn series(label: impl Into<String>) -> Self {
        Self { label: label.into(), sample: LegendSample::Series }
    }
}

/// Text beside a point of the plot (e.g. the best kernel of a group), in data units.
#[derive(Debug, Clone, PartialEq)]
pub struct PointLabel {
    /// x of the point.
    pub x: f64,
    /// y of the point.
    pub y: f64,
    /// The text, one line.
    pub text: String,
}

/// The scale of one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Axis {
    /// Linear. A linear y axis always includes 0.
    Linear,
    /// Base-2 logarithmic, for sizes that double; ticks at the powers of two in range, labelled as plain numbers
    /// up to 8192 (256, 512, ..., 8192) and as 2^k on an axis that reaches 2^14 or more (2^15, ..., 2^25).
    Log2,
    /// Base-10 logarithmic; ticks at every power of ten in range (or 1-2-5 steps within a few decades).
    Log10,
}

/// A line plot: what [`render_png`] draws.
#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    /// Names the device and the run, e.g. `"SGEMM ladder on MI250X GCD (gfx90a, wave64), run 2024-05-01T12:00Z"`.
    pub title: String,
    /// A second, smaller line under the title.
    pub subtitle: Option<String>,
    /// x axis label with its unit, e.g. `"matrix size N (M = N = K)"`.
    pub x_label: String,
    /// y axis label with its unit, e.g. `"GFLOP/s"`.
    pub y_label: String,
    /// Scale of the x axis.
    pub x_axis: Axis,
    /// Scale of the y axis.
    pub y_axis: Axis,
    /// The lines, in legend order. Line series take the palette colours in this order.
    pub series: Vec<Series>,
    /// Top of the y axis, in data units, where the data's own maximum would stretch the axis (an outlier far
    /// above the rest); points above it are clipped at the edge. `None`: the data's maximum.
    pub y_max: Option<f64>,
    /// A footnote drawn under the chart, e.g. why the reference is out of reach.
    pub note: Option<String>,
    /// The legend's entries for the measured series, where the plot groups them itself (a marker per experiment, a
    /// colour per family: the series carry those [`Style`]s); the reference and flagged series keep their own
    /// entries after these. `None`: one entry per series.
    pub legend: Option<Vec<LegendEntry>>,
    /// Text beside chosen points.
    pub labels: Vec<PointLabel>,
    /// The least height the plot needs, in pixels (a roofline with a grouped legend and a long note); a smaller
    /// height asked of [`render_png`] is raised to it.
    pub min_height: Option<u32>,
    /// Names of the x positions, for a plot of things that have no order or scale (matmul's shapes): point i is
    /// drawn at x = i and the axis is labelled with these names, each wrapped at its spaces to fit its slot. Empty:
    /// a numeric x axis.
    pub x_categories: Vec<String>,
}

impl Default for LinePlot {
    /// An empty plot on linear axes, for `..LinePlot::default()` after the fields a plot sets.
    fn default() -> Self {
        LinePlot {
            title: String::new(),
            subtitle: None,
            x_label: String::new(),
            y_label: String::new(),
            x_axis: Axis::Linear,
            y_axis: Axis::Linear,
            series: Vec::new(),
            y_max: None,
            note: None,
            legend: None,
            labels: Vec::new(),
            min_height: None,
            x_categories: Vec::new(),
        }
    }
}

/// Renders `plot` as a `width` x `height` pixel PNG at `path` (overwriting it; the height raised to the plot's
/// [`LinePlot::min_height`]). The parent folder must exist.
///
/// Fails, naming `path`, when there is nothing to draw (no series, or a series with no drawable point), when the
/// image is smaller than [`MIN_SIZE`], or when drawing, encoding or writing fails. The same input always gives the
/// same bytes.
pub fn render_png(plot: &LinePlot, path: &Path, width: u32, height: u32) -> Result<(), Error> {
    let height = plot.min_height.map_or(height, |h| height.max(h));
    let rgb = render_rgb(plot, path, width, height)?;
    let bytes = encode_png(&rgb, width, height).map_err(|source| Error::Encode { path: path.to_owned(), source })?;
    // Beside its name and renamed, never through a link planted under it (crate::safe_fs).
    crate::safe_fs::write_whole(path, &bytes).map_err(|source| Error::Write { path: path.to_owned(), source })
}

// ---------------------------------------------------------------------------------------------------------------
// Style

/// Line colours, in the order series take them. The first six are the Okabe-Ito colours (safe for the common
/// colour-vision deficiencies; its yellow and black are left out: yellow is unreadable on white and black is kept
/// for references), the rest are from Paul Tol's "muted" and "medium-contrast" sets. Adjacent entries differ in
/// hue and lightness, so neighbours in a kernel ladder stay apart. Beyond 16 series the colours repeat.
const PALETTE: [RGBColor; 16] = [
    RGBColor(0x00, 0x72, 0xB2), // blue
    RGBColor(0xE6, 0x9F, 0x00), // orange
    RGBColor(0x00, 0x9E, 0x73), // bluish green
    RGBColor(0xD5, 0x5E, 0x00), // vermillion
    RGBColor(0xCC, 0x79, 0xA7), // reddish purple
    RGBColor(0x56, 0xB4, 0xE9), // sky blue
    RGBColor(0x33, 0x22, 0x88), // indigo
    RGBColor(0x99, 0x99, 0x33), // olive
    RGBColor(0x88, 0x22, 0x55), // wine
    RGBColor(0x44, 0xAA, 0x99), // teal
    RGBColor(0x11, 0x77, 0x33), // green
    RGBColor(0xAA, 0x44, 0x99), // purple
    RGBColor(0x99, 0x77, 0x00), // dark yellow
    RGBColor(0x66, 0x99, 0xCC), // light blue
    RGBColor(0xCC, 0x66, 0x77), // rose
    RGBColor(0x66, 0x33, 0x00), // brown
];
/// The shape of a series' markers. Measured series (lines and points) take colour `i % 16` and shape
/// `(i + i / 16) % 4` for the `i`-th of them, so no two of the first 64 share both colour and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A filled square.
    Square,
    /// A filled triangle, point up.
    Triangle,
    /// A filled diamond.
    Diamond,
}

/// Marker shapes, in the order measured series take them.
pub const MARKERS: [Marker; 4] = [Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond];

/// The colour and marker of the `i`-th measured series.
pub fn measured_style(i: usize) -> (RGBColor, Marker) {
    (PALETTE[i % PALETTE.len()], MARKERS[(i + i / PALETTE.len()) % MARKERS.len()])
}

/// The corners of a marker of `shape` and radius `r` around `c`, as a closed polygon (a circle is drawn by plotters
/// itself and has none).
fn marker_polygon(shape: Marker, (x, y): (i32, i32), r: i32) -> Vec<(i32, i32)> {
    match shape {
        Marker::Circle => Vec::new(),
        // A square of the circle's area looks the same size: side sqrt(pi) r.
        Marker::Square => {
            let h = (0.886 * f64::from(r)).round() as i32;
            vec![(x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h)]
        }
        Marker::Triangle => {
            let (up, down, half) = (
                (1.35 * f64::from(r)).round() as i32,
                (0.68 * f64::from(r)).round() as i32,
                (1.17 * f64::from(r)).round() as i32,
            );
            vec![(x, y - up), (x + half, y + down), (x - half, y + down)]
        }
        Marker::Diamond => {
            let d = (1.25 * f64::from(r)).round() as i32;
            vec![(x, y - d), (x + d, y), (x, y + d), (x - d, y)]
        }
    }
}

/// Draws a marker of `shape` at pixel `c` on `root`.
fn draw_marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    shape: Marker,
    c: (i32, i32),
    r: i32,
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    match shape {
        Marker::Circle => root.draw(&Circle::new(c, r, color.filled())),
        _ => root.draw(&Polygon::new(marker_polygon(shape, c, r), color.filled())),
    }
}

/// Draws the outline of a marker of `shape` at pixel `c` on `root`, `width` pixels wide.
fn draw_ring<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    shape: Marker,
    c: (i32, i32),
    r: i32,
    width: u32,
    color: RGBColor,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    match shape {
        Marker::Circle => root.draw(&Circle::new(c, r, color.stroke_width(width))),
        _ => {
            let mut outline = marker_polygon(shape, c, r);
            outline.push(outline[0]);
            root.draw(&PathElement::new(outline, color.stroke_width(width)))
        }
    }
}

/// Draws series `p`'s marker at `c`: a ring for [`SeriesKind::Rings`] (`ring_w` wide), [`SeriesKind::Flagged`]
/// (twice as wide) and hollow markers, filled otherwise.
fn draw_sample<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Prepared,
    c: (i32, i32),
    r: i32,
    ring_w: u32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    match p.kind {
        SeriesKind::Rings => draw_ring(root, p.marker, c, r, ring_w, p.color),
        SeriesKind::Flagged => draw_ring(root, p.marker, c, r, 2 * ring_w, p.color),
        // A hollow marker: an outline of the series' colour, a little thicker than a ring of a second run.
        _ if p.hollow => draw_ring(root, p.marker, c, r, (3 * ring_w).div_ceil(2), p.color),
        _ => draw_marker(root, p.marker, c, r, p.color),
    }
}

/// Reference colours, in order: black, then greys that stay distinct from it.
const REFERENCE_PALETTE: [RGBColor; 3] =
    [RGBColor(0x00, 0x00, 0x00), RGBColor(0x6E, 0x6E, 0x6E), RGBColor(0xA0, 0xA0, 0xA0)];
/// Marker radius of series drawn as scattered markers over the line markers' radius, on the chart and in the
/// legend: points are what such a plot shows, so larger (and never shrunk for crowding); rings wider still, so a
/// point at the same place shows inside the ring.
fn scatter_scale(kind: SeriesKind) -> Option<f64> {
    match kind {
        SeriesKind::Points => Some(1.6),
        SeriesKind::Rings => Some(2.3),
        // Around a ring of a second run too (a compare roofline), with room for its own width.
        SeriesKind::Flagged => Some(3.2),
        _ => None,
    }
}
/// The colour of [`SeriesKind::Focus`] series: crimson, in no palette, so the series a plot is about stands out.
pub const FOCUS: RGBColor = RGBColor(0xDC, 0x14, 0x3C);
/// The colour of [`SeriesKind::Flagged`] rings: pure red, in no palette and apart from [`FOCUS`]'s crimson, read
/// as a warning at a glance.
pub const FLAGGED: RGBColor = RGBColor(0xFF, 0x00, 0x00);
const TEXT: RGBColor = RGBColor(0x1A, 0x1A, 0x1A);
const MUTED_TEXT: RGBColor = RGBColor(0x55, 0x55, 0x55);
const AXIS: RGBColor = RGBColor(0x33, 0x33, 0x33);
const GRID: RGBColor = RGBColor(0xD8, 0xD8, 0xD8);
const MINOR_GRID: RGBColor = RGBColor(0xF0, 0xF0, 0xF0);
const FRAME: RGBColor = RGBColor(0xBB, 0xBB, 0xBB);

/// Sizes at the final resolution, in pixels (font sizes are em sizes), all scaled with the image.
struct Metrics {
    pad: f64,
    title_em: f64,
    subtitle_em: f64,
    axis_em: f64,
    tick_em: f64,
    legend_em: f64,
    note_em: f64,
    tick_len: f64,
    line_w: f64,
    reference_w: f64,
    focus_w: f64,
    marker_r: f64,
}

impl Metrics {
    fn new(width: u32, height: u32) -> Self {
        // 1.0 at about 1400x900; clamped so small images stay legible and huge ones do not get giant text.
        let s = (f64::from(width) / 1400.0).min(f64::from(height) / 900.0).clamp(0.6, 4.0);
        Self {
            pad: 18.0 * s,
            title_em: 26.0 * s,
            subtitle_em: 18.0 * s,
            axis_em: 19.0 * s,
            tick_em: 16.5 * s,
            legend_em: 16.5 * s,
            note_em: 15.0 * s,
            tick_len: (5.0 * s).round().max(3.0),
            line_w: (2.0 * s).max(1.2),
            reference_w: (3.0 * s).max(2.0),
            focus_w: (4.5 * s).max(3.0),
            marker_r: (3.5 * s).max(2.5),
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Data preparation

/// A series after skipping undrawable points, mapped into axis space (log axes hold exponents; in a bar plot x is
/// the bar's slot).
struct Prepared<'a> {
    label: &'a str,
    kind: SeriesKind,
    color: RGBColor,
    marker: Marker,
    /// Markers drawn as outlines ([`Style::hollow`]).
    hollow: bool,
    points: Vec<(f64, f64)>,
    /// Error bars (x, low, high), in axis space.
    spread: Vec<(f64, f64, f64)>,
    /// How many series drawn later lie on this one somewhere (a shared segment of line, or a shared point): it is
    /// drawn that much wider, so it shows around them rather than under them.
    under: usize,
}

impl Prepared<'_> {
    /// Width factor of its line and marker radius factor, from [`Prepared::under`].
    fn widening(&self) -> (f64, f64) {
        // Two widths more at most: a line under three others is told apart by then, and a marker would grow into a
        // blot.
        let k = self.under.min(2) as f64;
        (1.0 + 1.5 * k, 1.0 + 0.6 * k)
    }
}

/// The value on the axis that `v` is drawn at, or `None` when it cannot be drawn on that axis.
fn to_axis(axis: Axis, v: f64) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    match axis {
        Axis::Linear => Some(v),
        Axis::Log2 if v > 0.0 => Some(v.log2()),
        Axis::Log10 if v > 0.0 => Some(v.log10()),
        Axis::Log2 | Axis::Log10 => None,
    }
}

/// A series' drawable points in data units, sorted by x: what two series are compared by.
fn drawable(plot: &LinePlot, s: &Series) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = s
        .points
        .iter()
        .copied()
        .filter(|&(x, y)| to_axis(plot.x_axis, x).is_some() && to_axis(plot.y_axis, y).is_some())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    pts
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The plot as drawn: series of one kind whose drawable points are identical are merged into one, labelled with
/// every name ("A and B (identical)"), so a legend entry never stands for a line hidden under another. Rings
/// flagging points are meant to lie on them and are kept as they are.
pub fn normalised(plot: &LinePlot) -> LinePlot {
    let mut out = plot.clone();
    let pts: Vec<Vec<(f64, f64)>> = plot.series.iter().map(|s| drawable(plot, s)).collect();
    // A line identical to the series the plot is about (drawn over it, dashed) joins it too.
    let kin = |a: SeriesKind, b: SeriesKind| {
        a == b || matches!((a, b), (SeriesKind::Focus, SeriesKind::Line) | (SeriesKind::Line, SeriesKind::Focus))
    };
    let mut merged_into: Vec<Option<usize>> = vec![None; plot.series.len()];
    let mut keep: Vec<usize> = Vec::with_capacity(plot.series.len());
    for i in 0..plot.series.len() {
        let s = &plot.series[i];
        let same = keep.iter().copied().find(|&j| {
            s.kind != SeriesKind::Flagged && kin(plot.series[j].kind, s.kind) && !pts[i].is_empty() && pts[j] == pts[i]
        });
        match same {
            Some(j) => merged_into[i] = Some(j),
            None => keep.push(i),
        }
    }
    // Where a line joins the series the plot is about, the merged series is that one (its kind and style).
    let series: Vec<usize> = keep
        .iter()
        .map(|&i| {
            let focus = std::iter::once(i)
                .chain((0..plot.series.len()).filter(|&k| merged_into[k] == Some(i)))
                .find(|&k| plot.series[k].kind == SeriesKind::Focus);
            focus.unwrap_or(i)
        })
        .collect();
    // Re-point the members of a group at the series that stands for it.
    for (&kept, &stand) in keep.iter().zip(&series) {
        if kept != stand {
            merged_into[kept] = Some(stand);
            merged_into[stand] = None;
            for m in merged_into.iter_mut().filter(|m| **m == Some(kept)) {
                *m = Some(stand);
            }
        }
    }
    // Bars on a log axis are read by their height: from the axis' floor that misleads (983 GB/s drawn as a sliver
    // beside 1,983). A bar plot keeps its log axis only where its values lie on both sides of 1 (speedups: the bars
    // grow up or down from 1); otherwise it is drawn on a linear axis from 0.
    if single_x(plot).is_some() && plot.y_axis != Axis::Linear {
        let ys: Vec<f64> =
            plot.series.iter().filter(|s| s.is_measured()).flat_map(|s| drawable(plot, s)).map(|p| p.1).collect();
        let straddles_one = ys.iter().any(|&y| y < 1.0) && ys.iter().any(|&y| y > 1.0);
        if !straddles_one {
            out.y_axis = Axis::Linear;
            out.y_label = out.y_label.replace(" (log scale)", "");
        }
    }
    out.series = series
        .iter()
        .map(|&i| {
            let twins: Vec<&str> = std::iter::once(plot.series[i].label.as_str())
                .chain(
                    (0..plot.series.len())
                        .filter(|&k| merged_into[k] == Some(i))
                        .map(|k| plot.series[k].label.as_str()),
                )
                .collect();
            let mut s = plot.series[i].clone();
            if twins.len() > 1 {
                s.label = format!("{} (identical)", and_list(&twins));
            }
            s
        })
        .collect();
    out
}

/// The x every measured series of `plot` is drawn at, when they all have one and the same: such a plot is drawn
/// as bars, one per series, since a line through one x shows nothing.
pub fn single_x(plot: &LinePlot) -> Option<f64> {
    let mut xs =
        plot.series.iter().filter(|s| s.is_measured()).flat_map(|s| drawable(plot, s).into_iter().map(|p| p.0));
    let first = xs.next()?;
    xs.all(|x| x == first).then_some(first)
}

/// The number of entries the plot's legend has as drawn (a heading counts as an entry).
pub fn legend_entries(plot: &LinePlot) -> usize {
    let plot = normalised(plot);
    let bars = single_x(&plot).is_some();
    let own = plot.series.iter().filter(|s| !s.is_measured()).count();
    match &plot.legend {
        Some(entries) => {
            let listed = |s: &&Series| entries.iter().any(|e| e.sample == LegendSample::Series && e.label == s.label);
            entries.len() + plot.series.iter().filter(|s| !s.is_measured()).filter(|s| !listed(s)).count()
        }
        None if bars => own,
        None => plot.series.len(),
    }
}

/// Whether the plot's legend is grouped by the plot ([`LinePlot::legend`]).
pub fn legend_is_grouped(plot: &LinePlot) -> bool {
    plot.legend.is_some()
}

/// Pairs of series (labels) whose drawn lines or points coincide somewhere while the one underneath is not drawn
/// wider: a line that shares a segment with one drawn over it, or points that share a point (equal, or closer than
/// a line's width). [`render_png`] widens
/// the one underneath and merges identical ones, so this is empty for what it draws; the plots' tests check it.
pub fn hidden_series(plot: &LinePlot) -> Vec<(String, String)> {
    let plot = normalised(plot);
    let Ok(prepared) = prepare(&plot, Path::new("-")) else { return Vec::new() };
    let mut out = Vec::new();
    for (i, a) in prepared.iter().enumerate() {
        for b in &prepared[i + 1..] {
            if a.kind == b.kind && a.under == 0 && coincide_within(a, b, line_width_in_y(&prepared, &plot)) {
                out.push((a.label.to_string(), b.label.to_string()));
            }
        }
    }
    out
}

/// How close (a share of the y axis' span) two values at one x must be to be drawn over each other: about a line's
/// width on a chart of the default size.
const COVERS: f64 = 0.006;

/// Whether `b`, drawn after `a`, covers part of it: a line segment both have, or (points) a point both have, equal
/// or closer than a line's width (`tolerance`, in axis units of y).
fn coincide_within(a: &Prepared<'_>, b: &Prepared<'_>, tolerance: f64) -> bool {
    let same = |p: (f64, f64), q: (f64, f64)| p.0 == q.0 && (p.1 - q.1).abs() <= tolerance;
    match a.kind {
        SeriesKind::Line | SeriesKind::Focus => {
            a.points.windows(2).any(|s| b.points.windows(2).any(|t| same(s[0], t[0]) && same(s[1], t[1])))
        }
        // Points are markers: they cover one another only where they are the same point (a scatter's neighbours
        // within a line's width are still seen apart, each with its white ring).
        SeriesKind::Points | SeriesKind::Rings => a.points.iter().any(|p| b.points.contains(p)),
        _ => false,
    }
}

/// [`coincide_within`] for exactly equal values.
#[cfg(test)]
fn coincide(a: &Prepared<'_>, b: &Prepared<'_>) -> bool {
    coincide_within(a, b, 0.0)
}

/// A line's width in `series`' y units: [`COVERS`] of the y axis' span as `plot` draws it (a linear axis from 0, up
/// to its `y_max` where it has one).
fn line_width_in_y(series: &[Prepared<'_>], plot: &LinePlot) -> f64 {
    let (mut lo, mut hi) = bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    if plot.y_axis == Axis::Linear {
        (lo, hi) = (lo.min(0.0), hi.max(0.0));
    }
    if let Some(top) = plot.y_max.and_then(|v| to_axis(plot.y_axis, v)) {
        hi = top;
    }
    COVERS * (hi - lo).abs()
}

fn prepare<'a>(plot: &'a LinePlot, path: &Path) -> Result<Vec<Prepared<'a>>, Error> {
    if plot.series.is_empty() {
        return Err(Error::NoSeries { path: path.to_owned() });
    }
    let bars = single_x(plot).is_some();
    let (mut lines, mut refs, mut slot) = (0, 0, 0usize);
    let mut out = Vec::with_capacity(plot.series.len());
    for s in &plot.series {
        let mut points: Vec<(f64, f64)> =
            s.points.iter().filter_map(|&(x, y)| Some((to_axis(plot.x_axis, x)?, to_axis(plot.y_axis, y)?))).collect();
        if points.is_empty() {
            return Err(Error::EmptySeries { path: path.to_owned(), label: s.label.clone(), given: s.points.len() });
        }
        // A sweep may list its points in any order; a line must go left to right.
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut spread: Vec<(f64, f64, f64)> = s
            .spread
            .iter()
            .filter_map(|&(x, lo, hi)| {
                Some((to_axis(plot.x_axis, x)?, to_axis(plot.y_axis, lo)?, to_axis(plot.y_axis, hi)?))
            })
            .collect();
        if bars && s.is_measured() {
            // One bar per measured series, in slots 0..n: its x becomes the slot's middle.
            let centre = slot as f64 + 0.5;
            points.iter_mut().for_each(|p| p.0 = centre);
            spread.iter_mut().for_each(|b| b.0 = centre);
            slot += 1;
        }
        let (color, marker) = match s.kind {
            SeriesKind::Line | SeriesKind::Points | SeriesKind::Rings => {
                lines += 1;
                measured_style(lines - 1)
            }
            SeriesKind::Reference => {
                refs += 1;
                (REFERENCE_PALETTE[(refs - 1) % REFERENCE_PALETTE.len()], Marker::Circle)
            }
            SeriesKind::Focus => (FOCUS, Marker::Circle),
            SeriesKind::Flagged => (FLAGGED, Marker::Circle),
        };
        let (color, marker, hollow) = match (s.style, s.is_measured()) {
            (Some(style), true) => (style.color, style.marker, style.hollow),
            _ => (color, marker, false),
        };
        out.push(Prepared { label: &s.label, kind: s.kind, color, marker, hollow, points, spread, under: 0 });
    }
    if bars {
        // Flagged rings go around the bars whose values they flag.
        let tops: Vec<(f64, f64, f64)> = plot
            .series
            .iter()
            .zip(&out)
            .filter(|(s, _)| s.is_measured())
            .filter_map(|(s, p)| Some((s.points.first()?.1, p.points[0].0, p.points[0].1)))
            .collect();
        for (s, p) in plot.series.iter().zip(out.iter_mut()).filter(|(s, _)| s.kind == SeriesKind::Flagged) {
            p.points =
                s.points.iter().filter_map(|&(_, y)| tops.iter().find(|t| t.0 == y).map(|t| (t.1, t.2))).collect();
        }
    } else {
        // Series drawn later over an earlier one of the same kind (equal there, or closer than a line's width): the
        // earlier is widened (lines and points are drawn in series order within their kind).
        let width = line_width_in_y(&out, plot);
        for i in 0..out.len() {
            let under = (i + 1..out.len())
                .filter(|&j| out[j].kind == out[i].kind && coincide_within(&out[i], &out[j], width))
                .count();
            out[i].under = under;
        }
    }
    Ok(out)
}

/// Smallest and largest of the values (the caller guarantees at least one, all finite).
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

// ---------------------------------------------------------------------------------------------------------------
// Axes and ticks

/// One axis in axis space (log axes hold exponents): the drawn range, labelled ticks and unlabelled minor grid
/// lines.
struct AxisSpec {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    minor: Vec<f64>,
}

impl AxisSpec {
    /// Where `v` falls between `a` (at `lo`) and `b` (at `hi`), in pixels.
    fn to_px(&self, v: f64, a: f64, b: f64) -> f64 {
        a + (v - self.lo) / (self.hi - self.lo) * (b - a)
    }
}

/// The chart coordinate for plotters: linear in axis space, so log axes are linear in the exponent. (plotters'
/// own `f64` range cannot carry our ticks; grid and labels are drawn here, plotters only maps and clips series.)
impl Ranged for &AxisSpec {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.to_px(*v, f64::from(limit.0), f64::from(limit.1)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.iter().map(|(t, _)| *t).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// 1, 2, 2.5 or 5 times a power of ten, about `span / target`.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 2.5 {
        2.5
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Decimal places needed to print multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    (0..=9)
        .find(|&d| {
            let scaled = step * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() <= 1e-6 * scaled.abs().max(1.0)
        })
        .unwrap_or(9)
}

/// A tick value as plain text: integers without decimals, then up to 6 significant decimals, then scientific.
fn format_plain(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    let a = v.abs();
    if (v - v.round()).abs() <= 1e-9 * a && a < 1e15 {
        format!("{:.0}", v.round())
    } else if (1e-4..1e15).contains(&a) {
        let d = (6 - a.log10().floor() as i32).clamp(0, 10) as usize;
        let s = format!("{v:.d$}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{v:e}")
    }
}

/// Ticks at multiples of a nice step inside `lo..=hi`, printed with the decimals the step needs.
fn linear_ticks(lo: f64, hi: f64, target: f64) -> Vec<(f64, String)> {
    let step = nice_step(hi - lo, target);
    let d = decimals_for(step);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    if !step.is_finite() || step <= 0.0 || last - first > 100 {
        // Only for ranges near the limits of f64 (a span that overflows): no ticks rather than a runaway loop.
        return Vec::new();
    }
    (first..=last)
        .map(|k| {
            let v = k as f64 * step;
            let label = format!("{v:.d$}");
            // A plain 0 reads better than "0.0" or "-0".
            let label = if label.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
                "0".to_owned()
            } else {
                label
            };
            (v, label)
        })
        .collect()
}

/// A linear axis over `lo..=hi`; `from_zero` (the y axis) makes it include 0 and start exactly there.
fn linear_axis(lo: f64, hi: f64, from_zero: bool, target: f64) -> AxisSpec {
    let (mut lo, mut hi) = (lo, hi);
    if from_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(lo.abs()).max(1.0) {
        let half = (hi.abs() * 0.1).max(0.5);
        (lo, hi) = if from_zero && lo == 0.0 { (0.0, 2.0 * half) } else { (lo - half, hi + half) };
    }
    // Room so markers at the extremes are not cut, except at 0 on the y axis.
    let margin = 0.04 * (hi - lo);
    let lo = if from_zero && lo == 0.0 { 0.0 } else { lo - margin };
    let hi = if from_zero && hi == 0.0 { 0.0 } else { hi + margin };
    AxisSpec { lo, hi, ticks: linear_ticks(lo, hi, target), minor: Vec::new() }
}

/// Labels a log axis should have at least, where they fit, so a value can be read between two of them.
const MIN_LOG_LABELS: usize = 5;

/// A log axis (base 2 or 10) over the exponents `lo..=hi`, with at most `max_labels` labels.
fn log_axis(base: f64, lo: f64, hi: f64, max_labels: usize) -> AxisSpec {
    let (lo, hi) = if hi - lo < 1e-12 { (lo - 0.5, hi + 0.5) } else { (lo - 0.04 * (hi - lo), hi + 0.04 * (hi - lo)) };
    let max_labels = max_labels.max(2);
    let inside = |e: f64| e >= lo - 1e-9 && e <= hi + 1e-9;
    let powers: Vec<i32> = ((lo - 1e-9).ceil() as i32..=(hi + 1e-9).floor() as i32).collect();
    // Every stride-th power, aligned to multiples of the stride so the labels are regular; the skipped powers keep
    // a light grid line.
    // Log10 axes are labelled at every decade (a skipped decade reads as a factor of 100 per step); base 2 thins.
    let label_limit = if base == 10.0 { max_labels.max(12) } else { max_labels };
    // Powers of two read as 2^k once the numbers get long (past 8192), on the whole axis alike.
    let as_power = base == 2.0 && powers.last().is_some_and(|&k| k >= 14);
    let power_label = |k: i32| if as_power { format!("2^{k}") } else { decade_label(base, 1, k) };
    let thinned = |powers: &[i32]| {
        let stride = powers.len().div_ceil(label_limit) as i32;
        let (kept, skipped): (Vec<i32>, Vec<i32>) = powers.iter().partition(|&&k| k.rem_euclid(stride) == 0);
        let ticks = kept.iter().map(|&k| (f64::from(k), power_label(k))).collect::<Vec<_>>();
        (ticks, skipped.iter().map(|&k| f64::from(k)).collect::<Vec<_>>(), stride)
    };
    // m x 10^k inside the range, for each m in `mults`, in increasing order.
    let multiples = |mults: &[u32]| -> Vec<(f64, String)> {
        let mut out = Vec::new();
        for k in (lo.floor() as i32 - 1)..=(hi.ceil() as i32) {
            for &m in mults {
                let e = (f64::from(m) * 10f64.powi(k)).log10();
                if inside(e) {
                    out.push((e, decade_label(base, m, k)));
                }
            }
        }
        out
    };
    // The first set with enough labels to read a value between them (MIN_LOG_LABELS) that fits, else the
    // densest that fits: a log axis over less than a few decades labelled only at its powers shows two or three
    // values, too few to read a point by.
    let choose = |sets: Vec<Vec<(f64, String)>>| -> Option<Vec<(f64, String)>> {
        let fitting: Vec<Vec<(f64, String)>> =
            sets.into_iter().filter(|t| t.len() >= 2 && t.len() <= max_labels).collect();
        let enough = fitting.iter().position(|t| t.len() >= MIN_LOG_LABELS);
        match enough {
            Some(i) => fitting.into_iter().nth(i),
            None => fitting.into_iter().max_by_key(|t| t.len()),
        }
    };
    let (mut ticks, mut minor) = if base == 2.0 {
        // m x 2^k for m in `mults`, inside the range.
        let binary = |mults: &[f64]| -> Vec<(f64, String)> {
            let mut out = Vec::new();
            for k in (lo.floor() as i32 - 1)..=(hi.ceil() as i32) {
                for &m in mults {
                    let e = f64::from(k) + m.log2();
                    if inside(e) {
                        out.push((e, format_plain(m * 2f64.powi(k))));
                    }
                }
            }
            out
        };
        let few = !as_power && powers.len() < 4;
        match few.then(|| choose(vec![binary(&[1.0]), binary(&[1.0, 1.5]), binary(&[1.0, 1.25, 1.5, 1.75])])).flatten()
        {
            Some(ticks) => (ticks, Vec::new()),
            None => {
                let (ticks, minor, _) = thinned(&powers);
                (ticks, minor)
            }
        }
    } else {
        let digits: Vec<f64> = multiples(&[2, 3, 4, 5, 6, 7, 8, 9]).into_iter().map(|(e, _)| e).collect();
        let chosen = (powers.len() <= 4)
            .then(|| {
                choose(vec![multiples(&[1, 2, 5]), multiples(&[1, 2, 3, 5]), multiples(&[1, 2, 3, 4, 5, 6, 7, 8, 9])])
            })
            .flatten();
        match chosen {
            // Up to a few decades: 1-2-5 steps, or denser where they give too few labels.
            Some(ticks) => {
                let labelled: Vec<f64> = ticks.iter().map(|t| t.0).collect();
                let minor = digits.into_iter().filter(|e| !labelled.iter().any(|l| (l - e).abs() < 1e-9)).collect();
                (ticks, minor)
            }
            // Several decades: label the powers of ten; light lines at 2..9 times each (the log-paper look).
            None => {
                let (ticks, skipped, stride) = thinned(&powers);
                (ticks, if stride == 1 { digits } else { skipped })
            }
        }
    };
    if ticks.is_empty() {
        // No round value in range (e.g. one point at 300 on a log2 axis): label the middle of the range.
        let mid = 0.5 * (lo + hi);
        ticks.push((mid, format_plain(base.powf(mid))));
        minor.clear();
    }
    AxisSpec { lo, hi, ticks, minor }
}

/// The label of `m` x `base`^`k`: a plain number, except powers of ten beyond a million (or below 1e-4), which
/// read better as 1e7 or 2e8 than as a row of zeros. Powers of two stay plain (sizes read as 4096, 8192, ...).
fn decade_label(base: f64, m: u32, k: i32) -> String {
    if base == 10.0 && !(-4..=6).contains(&k) {
        format!("{m}e{k}")
    } else {
        format_plain(f64::from(m) * base.powi(k))
    }
}

/// The axis for values `lo..=hi` (in axis space), with at most about `max_labels` labels.
fn axis_spec(axis: Axis, lo: f64, hi: f64, is_y: bool, max_labels: usize) -> AxisSpec {
    match axis {
        Axis::Linear => {
            let target = if is_y { 8.0_f64 } else { 9.0 };
            linear_axis(lo, hi, is_y, target.min(max_labels as f64).max(2.0))
        }
        Axis::Log2 => log_axis(2.0, lo, hi, max_labels),
        Axis::Log10 => log_axis(10.0, lo, hi, max_labels),
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Text

/// The bundled font, parsed once per process.
fn typeface(path: &Path) -> Result<&'static FontRef<'static>, Error> {
    static FONT: OnceLock<Result<FontRef<'static>, String>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|message| Error::Font { path: path.to_owned(), message: message.clone() })
}

#[derive(Clone, Copy)]
enum HAlign {
    Left,
    Center,
    Right,
}

#[derive(Clone, Copy)]
enum VAlign {
    /// `y` is the top of the line box (the font's ascent).
    Top,
    /// `y` is the middle of the capital letters, so labels centre on their tick.
    Middle,
}

/// Text laid out with the bundled font: kerning, side bearings and sub-pixel pen positions as the font defines.
struct Typesetter {
    font: &'static FontRef<'static>,
    /// Font units per em (2048 for DejaVu).
    units_per_em: f32,
    /// Height of the capitals (of "H") in ems, to centre labels on their ticks.
    cap_height: f64,
}

impl Typesetter {
    fn new(font: &'static FontRef<'static>) -> Self {
        let units_per_em = font.units_per_em().unwrap_or(2048.0);
        // abs: the outline box runs y-up, so its height comes out negative.
        let cap_units = font.outline(font.glyph_id('H')).map_or(0.7 * units_per_em, |o| o.bounds.height().abs());
        Self { font, units_per_em, cap_height: f64::from(cap_units / units_per_em) }
    }

    /// The ab_glyph scale for an em size in pixels (ab_glyph scales by ascent - descent, not by the em).
    fn scale(&self, em: f64) -> PxScale {
        PxScale::from(em as f32 * self.font.height_unscaled() / self.units_per_em)
    }

    fn width(&self, em: f64, text: &str) -> f64 {
        let font = self.font.as_scaled(self.scale(em));
        let mut pen = 0.0f32;
        let mut prev = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += font.kern(p, id);
            }
            pen += font.h_advance(id);
            prev = Some(id);
        }
        f64::from(pen)
    }

    /// Splits `text` into lines no wider than `max_w` pixels, at spaces (an overlong word gets a line of its own).
    /// Blank text gives no lines.
    fn wrap(&self, em: f64, text: &str, max_w: f64) -> Vec<String> {
        let mut lines = Vec::new();
        for paragraph in text.lines() {
            let mut line = String::new();
            for word in paragraph.split_whitespace() {
                let candidate = if line.is_empty() { word.to_owned() } else { format!("{line} {word}") };
                if !line.is_empty() && self.width(em, &candidate) > max_w {
                    lines.push(std::mem::replace(&mut line, word.to_owned()));
                } else {
                    line = candidate;
                }
            }
            if !line.is_empty() {
                lines.push(line);
            }
        }
        lines
    }

    /// Draws one line of text anchored at (`x`, `y`); `upright` turns it 90 degrees to read bottom to top (the y
    /// axis label), centred on the anchor.
    #[allow(clippy::too_many_arguments)]
    fn draw(
        &self,
        canvas: &mut Canvas<'_>,
        text: &str,
        em: f64,
        color: RGBColor,
        (x, y): (f64, f64),
        (h, v): (HAlign, VAlign),
        upright: bool,
    ) {
        let font = self.font.as_scaled(self.scale(em));
        let width = self.width(em, text);
        // Baseline origin along the text (u) and across it (v, down), relative to the anchor.
        let u0 = match h {
            HAlign::Left => 0.0,
            HAlign::Center => -width / 2.0,
            HAlign::Right => -width,
        };
        let v0 = match v {
            VAlign::Top => f64::from(font.ascent()),
            VAlign::Middle => 0.5 * self.cap_height * em,
        };
        // Glyph pixels come out relative to an integer origin; the fraction stays in the glyph position.
        let (ox, oy) = (x.floor(), y.floor());
        let (fx, fy) = (x - ox, y - oy);
        let (pen_u, base_v) = if upright { (u0 - fy, v0 + fx) } else { (u0 + fx, v0 + fy) };
        let mut pen = pen_u as f32;
        let mut prev = None;
        for c in text.chars() {
            let id = font.glyph_id(c);
            if let Some(p) = prev {
                pen += font.kern(p, id);
            }
            prev = Some(id);
            let glyph = id.with_scale_and_position(font.scale(), ab_glyph::point(pen, base_v as f32));
            pen += font.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else { continue };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, coverage| {
                let (u, v) = (b.min.x as i32 + gx as i32, b.min.y as i32 + gy as i32);
                let (px, py) = if upright { (ox as i32 + v, oy as i32 - u) } else { (ox as i32 + u, oy as i32 + v) };
                canvas.blend(px, py, color, coverage);
            });
        }
    }
}

/// The final-size RGB image, for drawing text over the downsampled shapes.
struct Canvas<'a> {
    rgb: &'a mut [u8],
    width: u32,
    height: u32,
}

impl Canvas<'_> {
    fn blend(&mut self, x: i32, y: i32, c: RGBColor, alpha: f32) {
        if x < 0 || y < 0 || x as u32 >= self.width || y as u32 >= self.height {
            return;
        }
        let a = alpha.clamp(0.0, 1.0);
        let i = (y as usize * self.width as usize + x as usize) * 3;
        for (dst, src) in self.rgb[i..i + 3].iter_mut().zip([c.0, c.1, c.2]) {
            *dst = (f32::from(*dst) * (1.0 - a) + f32::from(src) * a).round() as u8;
        }
    }
}

/// Averages each `k` x `k` block of an RGB image `w` x `h` (the supersampled size) into one pixel.
fn downsample(big: &[u8], w: u32, h: u32, k: u32) -> Vec<u8> {
    let (w, h, k) = (w as usize, h as usize, k as usize);
    let (ow, oh) = (w / k, h / k);
    let mut out = vec![0u8; ow * oh * 3];
    let n = (k * k) as u32;
    for oy in 0..oh {
        for ox in 0..ow {
            let mut sum = [0u32; 3];
            for dy in 0..k {
                let row = ((oy * k + dy) * w + ox * k) * 3;
                for px in big[row..row + k * 3].chunks_exact(3) {
                    for (s, &v) in sum.iter_mut().zip(px) {
                        *s += u32::from(v);
                    }
                }
            }
            let o = (oy * ow + ox) * 3;
            for (d, s) in out[o..o + 3].iter_mut().zip(sum) {
                *d = ((s + n / 2) / n) as u8;
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------------
// Layout

/// What a legend entry shows beside its text.
#[derive(Clone, Copy)]
enum Sample {
    /// Prepared series `i`'s own sample: its line, dashes or marker.
    Series(usize),
    /// A marker of the plot's choosing ([`LegendEntry::marker`]).
    Marker(Style),
    /// Nothing: a heading.
    Heading,
}

/// One entry of the legend as drawn.
struct LegendItem {
    label: String,
    sample: Sample,
}

/// The legend's entries: the plot's own grouped entries, then those of the series they do not stand for
/// (references, flagged rings); or one per series. A bar plot names its bars under them, so only its other series
/// are listed.
fn legend_items(plot: &LinePlot, series: &[Prepared<'_>], bars: bool) -> Vec<LegendItem> {
    let item = |i: usize| LegendItem { label: series[i].label.to_string(), sample: Sample::Series(i) };
    let listed =
        |i: usize| plot.legend.iter().flatten().any(|e| e.sample == LegendSample::Series && e.label == series[i].label);
    let others = (0..series.len()).filter(|&i| !plot.series[i].is_measured() && !listed(i)).map(item);
    match &plot.legend {
        Some(entries) => entries
            .iter()
            .filter_map(|e| {
                let sample = match e.sample {
                    LegendSample::Heading => Sample::Heading,
                    LegendSample::Marker(style) => Sample::Marker(style),
                    LegendSample::Series => Sample::Series(series.iter().position(|p| p.label == e.label)?),
                };
                Some(LegendItem { label: e.label.clone(), sample })
            })
            .chain(others)
            .collect(),
        None if bars => others.collect(),
        None => (0..series.len()).map(item).collect(),
    }
}

/// Where the legend is drawn.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Place {
    /// In a column of its own right of the chart, level with its top.
    Right,
    /// Under the chart's x axis, across the width, in as many columns as fit.
    Below,
    /// Nowhere: nothing to list.
    Nowhere,
}

/// The widest a legend beside the chart may be, as a share of the image's width: wider, it goes under the chart
/// (a compare plot's legend of long run labels took 40% of the width beside it).
const RIGHT_LEGEND_MAX: f64 = 0.3;

/// The legend's geometry: a framed box of columns filled top to bottom, in entry order.
struct LegendLayout {
    em: f64,
    row_h: f64,
    /// Each column's left edge, from the first's.
    col_x: Vec<f64>,
    /// Each entry's (column, row).
    positions: Vec<(usize, usize)>,
    sample_w: f64,
    inner_pad: f64,
    box_w: f64,
    box_h: f64,
    place: Place,
}

/// The legend of `items` at text size `em`: in columns of at most as many rows as fit in `limit` (beside the
/// chart: its height), or in as many columns as fit in `limit` (under it: its width). Each column is as wide as its
/// own entries, so one long entry does not widen the others.
fn legend_geometry(items: &[LegendItem], ts: &Typesetter, em: f64, place: Place, limit: f64) -> LegendLayout {
    let row_h = 1.65 * em;
    let sample_w = 2.4 * em;
    let inner_pad = 0.7 * em;
    let col_gap = 1.4 * em;
    let widths: Vec<f64> = items
        .iter()
        .map(|i| match i.sample {
            Sample::Heading => ts.width(em, &i.label),
            _ => sample_w + 0.6 * em + ts.width(em, &i.label),
        })
        .collect();
    let n = items.len().max(1);
    // Each entry's (column, row) and each column's left edge for `rows` rows a column, filled top to bottom; a
    // heading never ends a column (it moves to the top of the next, with the entries it heads). Balanced: 13
    // entries in two columns are 7 + 6, not 12 + 1.
    let columns = |rows: usize| -> (usize, Vec<(usize, usize)>, Vec<f64>, f64) {
        let rows = rows.max(1);
        let mut at = Vec::with_capacity(items.len());
        let (mut col, mut row) = (0, 0);
        for (i, item) in items.iter().enumerate() {
            let last_row = row + 1 == rows;
            if matches!(item.sample, Sample::Heading) && last_row && i + 1 < items.len() && rows > 1 {
                (col, row) = (col + 1, 0);
            }
            at.push((col, row));
            row += 1;
            if row == rows {
                (col, row) = (col + 1, 0);
            }
        }
        let cols = at.iter().map(|p| p.0 + 1).max().unwrap_or(1);
        let mut col_x = Vec::new();
        let mut x = 0.0;
        for c in 0..cols {
            col_x.push(x);
            let widest = at.iter().zip(&widths).filter(|(p, _)| p.0 == c).map(|(_, w)| *w).fold(0.0, f64::max);
            x += widest + col_gap;
        }
        let used_rows = at.iter().map(|p| p.1 + 1).max().unwrap_or(1);
        (used_rows, at, col_x, x - col_gap + 2.0 * inner_pad)
    };
    let (rows, positions, col_x, box_w) = match place {
        Place::Right => {
            let rows_fit = (((limit - 2.0 * inner_pad) / row_h).floor() as usize).max(1);
            columns(n.div_ceil(n.div_ceil(rows_fit)))
        }
        _ => (1..=n).map(|cols| columns(n.div_ceil(cols))).rev().find(|c| c.3 <= limit).unwrap_or_else(|| columns(n)),
    };
    let box_h = rows as f64 * row_h + 2.0 * inner_pad;
    LegendLayout { em, row_h, col_x, positions, sample_w, inner_pad, box_w, box_h, place }
}

/// A bar plot's bars: the one x they share and each bar's label, wrapped under it.
struct Bars {
    x: f64,
    labels: Vec<Vec<String>>,
    em: f64,
}

/// Text beside a point, placed: its box, and the point it belongs to (pixels of the final image).
struct LabelBox {
    point: (f64, f64),
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    text: String,
    em: f64,
}

/// Where everything goes, in pixels of the final image.
struct Layout {
    title: Vec<String>,
    subtitle: Vec<String>,
    note: Vec<String>,
    /// Top of the first title line, advancing by these line heights.
    title_lh: f64,
    subtitle_lh: f64,
    note_lh: f64,
    /// Top of the first note line.
    note_top: f64,
    /// The plotting area: left, top, right, bottom.
    plot: (f64, f64, f64, f64),
    legend_items: Vec<LegendItem>,
    legend: LegendLayout,
    legend_origin: (f64, f64),
    x: AxisSpec,
    y: AxisSpec,
    bars: Option<Bars>,
    /// A categorical x axis's names, as wrapped lines, one entry per category (at x = 0, 1, ...).
    categories: Vec<Vec<String>>,
    labels: Vec<LabelBox>,
}

/// Most lines a bar's label is wrapped into; the rest is cut with an ellipsis.
const BAR_LABEL_LINES: usize = 4;

fn layout(
    plot: &LinePlot,
    series: &[Prepared<'_>],
    ts: &Typesetter,
    m: &Metrics,
    width: u32,
    height: u32,
    path: &Path,
) -> Result<Layout, Error> {
    let too_small = |problem: String| Error::Size { path: path.to_owned(), width, height, problem };
    let (w, h) = (f64::from(width), f64::from(height));
    let text_w = w - 2.0 * m.pad;
    let title = ts.wrap(m.title_em, &plot.title, text_w);
    let subtitle = plot.subtitle.as_deref().map(|s| ts.wrap(m.subtitle_em, s, text_w)).unwrap_or_default();
    let note = plot.note.as_deref().map(|s| ts.wrap(m.note_em, s, text_w)).unwrap_or_default();
    let (title_lh, subtitle_lh, note_lh) = (1.3 * m.title_em, 1.4 * m.subtitle_em, 1.45 * m.note_em);
    let header_h = m.pad + title.len() as f64 * title_lh + subtitle.len() as f64 * subtitle_lh + m.pad;
    // The note keeps a padding's distance from the x axis label above it.
    let note_h = note.len() as f64 * note_lh;
    let footer_h = if note.is_empty() { m.pad } else { 2.0 * m.pad + note_h };
    let note_top = h - m.pad - note_h;
    let top = header_h;

    let bar_x = single_x(plot);
    let items = legend_items(plot, series, bar_x.is_some());
    let bar_em = 0.9 * m.tick_em;
    // Under the plot: tick marks, tick labels (a bar plot: its bars' labels, `lines` of them), the axis label.
    let x_area = |lines: usize| match bar_x {
        Some(_) => m.tick_len + 0.5 * m.tick_em + lines as f64 * 1.25 * bar_em + 0.7 * m.tick_em + 1.3 * m.axis_em,
        None if !plot.x_categories.is_empty() => {
            m.tick_len + 0.5 * m.tick_em + lines as f64 * 1.25 * m.tick_em + 0.7 * m.tick_em + 1.3 * m.axis_em
        }
        None => m.tick_len + 0.5 * m.tick_em + 1.3 * m.tick_em + 0.7 * m.tick_em + 1.3 * m.axis_em,
    };

    // The legend: beside the chart where it is narrow enough, else under it.
    let provisional_bottom = h - footer_h - x_area(2);
    let mut legend = None;
    if items.is_empty() {
        legend = Some(LegendLayout {
            em: m.legend_em,
            row_h: 0.0,
            col_x: Vec::new(),
            positions: Vec::new(),
            sample_w: 0.0,
            inner_pad: 0.0,
            box_w: 0.0,
            box_h: 0.0,
            place: Place::Nowhere,
        });
    } else {
        for shrink in [1.0, 0.92, 0.85] {
            let g = legend_geometry(&items, ts, shrink * m.legend_em, Place::Right, provisional_bottom - top);
            if g.box_w <= RIGHT_LEGEND_MAX * w {
                legend = Some(g);
                break;
            }
        }
    }
    let legend = legend.unwrap_or_else(|| legend_geometry(&items, ts, 0.9 * m.legend_em, Place::Below, text_w));
    let below_h = if legend.place == Place::Below { legend.box_h + 0.8 * m.pad } else { 0.0 };

    // The y axis first: its tick labels set the room on the left.
    let (mut ylo, mut yhi) = bounds(series.iter().flat_map(|s| {
        s.points.iter().map(|p| p.1).chain(s.spread.iter().flat_map(|b| [b.1, b.2]).filter(|v| v.is_finite()))
    }));
    if let Some(top) = plot.y_max.and_then(|v| to_axis(plot.y_axis, v)) {
        yhi = top;
        ylo = ylo.min(top);
    }
    let (xlo, xhi) = bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    for (axis, lo, hi) in [("x", xlo, xhi), ("y", ylo, yhi)] {
        // Log axes hold exponents here, so only a linear axis can overflow.
        if !(hi - lo).is_finite() || !(hi.abs().max(lo.abs()) * 2.0).is_finite() {
            return Err(Error::Range { path: path.to_owned(), axis, lo, hi });
        }
    }
    let place_chart = |lines: usize| -> Result<(f64, AxisSpec, f64, f64), Error> {
        let bottom = h - footer_h - below_h - x_area(lines);
        if bottom - top < 80.0 {
            return Err(too_small(match legend.place {
                Place::Below => format!(
                    "too small for the title, note and chart above a legend of {} series; make it larger or the labels \
                     shorter",
                    items.len()
                ),
                _ => format!(
                    "too small for the title, note and chart ({} and {} lines); make it taller or the text shorter",
                    title.len() + subtitle.len(),
                    note.len()
                ),
            }));
        }
        let y = axis_spec(plot.y_axis, ylo, yhi, true, ((bottom - top) / (2.6 * m.tick_em)).floor() as usize);
        let y_tick_w = y.ticks.iter().map(|(_, l)| ts.width(m.tick_em, l)).fold(0.0, f64::max);
        let left = m.pad + 1.3 * m.axis_em + 0.8 * m.tick_em + y_tick_w + 0.5 * m.tick_em + m.tick_len;
        let right = match legend.place {
            Place::Right => w - m.pad - legend.box_w - 1.5 * m.pad,
            _ => w - 2.0 * m.pad,
        };
        if right - left < 120.0 {
            return Err(too_small(format!(
                "too small for the chart next to a legend of {} series; make it wider or the labels shorter",
                items.len()
            )));
        }
        Ok((bottom, y, left, right))
    };
    let (bottom, y, left, right, x, bars, categories) = match bar_x {
        Some(value) => {
            let n = series.iter().zip(&plot.series).filter(|(_, s)| s.is_measured()).count();
            let wrap = |left: f64, right: f64| -> Vec<Vec<String>> {
                let slot = (right - left) / n as f64;
                plot.series
                    .iter()
                    .filter(|s| s.is_measured())
                    .map(|s| {
                        let mut lines = ts.wrap(bar_em, &s.label, 0.92 * slot);
                        if lines.len() > BAR_LABEL_LINES {
                            lines.truncate(BAR_LABEL_LINES);
                            lines[BAR_LABEL_LINES - 1].push_str(" ...");
                        }
                        lines
                    })
                    .collect()
            };
            let (_, _, left, right) = place_chart(2)?;
            let lines = wrap(left, right).iter().map(Vec::len).max().unwrap_or(1).max(1);
            let (bottom, y, left, right) = place_chart(lines)?;
            let x = AxisSpec { lo: 0.0, hi: n as f64, ticks: Vec::new(), minor: Vec::new() };
            (bottom, y, left, right, x, Some(Bars { x: value, labels: wrap(left, right), em: bar_em }), Vec::new())
        }
        None if !plot.x_categories.is_empty() => {
            // One slot per category, its name wrapped at its spaces to the slot's width.
            let n = plot.x_categories.len();
            let wrap = |left: f64, right: f64| -> Vec<Vec<String>> {
                let slot = (right - left) / n as f64;
                plot.x_categories.iter().map(|c| ts.wrap(m.tick_em, c, 0.94 * slot)).collect()
            };
            let (_, _, left, right) = place_chart(2)?;
            let lines = wrap(left, right).iter().map(Vec::len).max().unwrap_or(1).max(1);
            let (bottom, y, left, right) = place_chart(lines)?;
            let ticks = (0..n).map(|i| (i as f64, String::new())).collect();
            let x = AxisSpec { lo: -0.5, hi: n as f64 - 0.5, ticks, minor: Vec::new() };
            (bottom, y, left, right, x, None, wrap(left, right))
        }
        None => {
            let (bottom, y, left, right) = place_chart(1)?;
            // The x axis: as many labels as fit side by side with a gap of about two digits.
            let mut max_labels = 12;
            let x = loop {
                let spec = axis_spec(plot.x_axis, xlo, xhi, false, max_labels);
                let widest = spec.ticks.iter().map(|(_, l)| ts.width(m.tick_em, l)).fold(0.0, f64::max);
                if spec.ticks.len() as f64 * (widest + 1.2 * m.tick_em) <= right - left || max_labels <= 2 {
                    break spec;
                }
                max_labels -= 1;
            };
            (bottom, y, left, right, x, None, Vec::new())
        }
    };
    let legend_origin = match legend.place {
        Place::Right => (w - m.pad - legend.box_w, top),
        _ => (m.pad, h - footer_h - legend.box_h),
    };
    let labels = point_labels(plot, &x, &y, (left, top, right, bottom), ts, m);
    Ok(Layout {
        title,
        subtitle,
        note,
        title_lh,
        subtitle_lh,
        note_lh,
        note_top,
        plot: (left, top, right, bottom),
        legend_items: items,
        legend,
        legend_origin,
        x,
        y,
        bars,
        categories,
        labels,
    })
}

/// The plot's point labels placed: each right of its point (left where it would leave the chart), moved down
/// past the labels placed before it where they would overlap.
fn point_labels(
    plot: &LinePlot,
    x: &AxisSpec,
    y: &AxisSpec,
    (left, top, right, bottom): (f64, f64, f64, f64),
    ts: &Typesetter,
    m: &Metrics,
) -> Vec<LabelBox> {
    let em = 0.85 * m.tick_em;
    let (pad, h) = (0.35 * em, 1.35 * em);
    let mut placed: Vec<LabelBox> = Vec::new();
    let mut wanted: Vec<(f64, f64, &str)> = plot
        .labels
        .iter()
        .filter_map(|l| {
            let (ax, ay) = (to_axis(plot.x_axis, l.x)?, to_axis(plot.y_axis, l.y)?);
            let (px, py) = (x.to_px(ax, left, right), y.to_px(ay, bottom, top));
            ((left..=right).contains(&px) && (top..=bottom).contains(&py)).then_some((px, py, l.text.as_str()))
        })
        .collect();
    wanted.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (px, py, text) in wanted {
        let w = ts.width(em, text) + 2.0 * pad;
        let gap = 2.2 * m.marker_r;
        let bx = if px + gap + w <= right { px + gap } else { (px - gap - w).max(left) };
        let mut by = (py - h / 2.0).clamp(top, bottom - h);
        for _ in 0..placed.len() + 1 {
            let overlap = placed.iter().find(|b| bx < b.x + b.w && b.x < bx + w && by < b.y + b.h && b.y < by + h);
            match overlap {
                Some(b) => by = b.y + b.h + 1.0,
                None => break,
            }
        }
        placed.push(LabelBox { point: (px, py), x: bx, y: by.min(bottom - h), w, h, text: text.to_string(), em });
    }
    placed
}

// ---------------------------------------------------------------------------------------------------------------
// Drawing

/// Draws the plot into an RGB buffer (3 bytes a pixel, rows top to bottom). `path` is only used in errors.
fn render_rgb(plot: &LinePlot, path: &Path, width: u32, height: u32) -> Result<Vec<u8>, Error> {
    let (min, max) = (MIN_SIZE, MAX_SIZE);
    if width < min.0 || height < min.1 || width > max.0 || height > max.1 {
        let problem = format!("plots take {}x{} to {}x{} px", min.0, min.1, max.0, max.1);
        return Err(Error::Size { path: path.to_owned(), width, height, problem });
    }
    let plot = &normalised(plot);
    let series = prepare(plot, path)?;
    let ts = Typesetter::new(typeface(path)?);
    let m = Metrics::new(width, height);
    let l = layout(plot, &series, &ts, &m, width, height, path)?;

    let (bw, bh) = (width * SS, height * SS);
    let mut big = vec![0u8; bw as usize * bh as usize * 3];
    draw_shapes(&mut big, (bw, bh), &series, &l, &m, path)?;
    let mut rgb = downsample(&big, bw, bh, SS);
    drop(big);
    draw_text(&mut Canvas { rgb: &mut rgb, width, height }, plot, &series, &ts, &l, &m);
    Ok(rgb)
}

/// A bar's colour filled: a lighter tint of the series' colour, so its error bar and outline read over it.
fn tint(c: RGBColor) -> RGBColor {
    let mix = |v: u8| (f64::from(v) + 0.45 * (255.0 - f64::from(v))).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// Everything but text, at `SS` times the final size.
fn draw_shapes(
    buf: &mut [u8],
    size: (u32, u32),
    series: &[Prepared<'_>],
    l: &Layout,
    m: &Metrics,
    path: &Path,
) -> Result<(), Error> {
    let err =
        |step| move |e: DrawingAreaErrorKind<_>| Error::Draw { path: path.to_owned(), step, message: e.to_string() };
    let k = f64::from(SS);
    let s = |v: f64| (v * k).round() as i32;
    let ss = SS as i32;
    // A line one final pixel wide: exactly one SS x SS block, so it stays crisp after downsampling.
    let crisp = |x0: i32, y0: i32, x1: i32, y1: i32| [(x0 * ss, y0 * ss), (x1 * ss + ss - 1, y1 * ss + ss - 1)];

    let root = BitMapBackend::with_buffer(buf, size).into_drawing_area();
    root.fill(&WHITE).map_err(err("background"))?;

    let (left, top, right, bottom) = l.plot;
    let (pl, pt, pr, pb) = (left.round() as i32, top.round() as i32, right.round() as i32, bottom.round() as i32);

    // Grid: minor lines, then major lines at the ticks.
    for (values, color) in [(&l.x.minor, MINOR_GRID), (&l.x.ticks.iter().map(|t| t.0).collect(), GRID)] {
        for &v in values {
            let x = l.x.to_px(v, left, right).round() as i32;
            root.draw(&Rectangle::new(crisp(x, pt, x, pb), color.filled())).map_err(err("grid"))?;
        }
    }
    for (values, color) in [(&l.y.minor, MINOR_GRID), (&l.y.ticks.iter().map(|t| t.0).collect(), GRID)] {
        for &v in values {
            let y = l.y.to_px(v, bottom, top).round() as i32;
            root.draw(&Rectangle::new(crisp(pl, y, pr, y), color.filled())).map_err(err("grid"))?;
        }
    }

    // Axes on the left and at the bottom, with tick marks outside.
    let tl = m.tick_len as i32;
    root.draw(&Rectangle::new(crisp(pl, pt, pl, pb), AXIS.filled())).map_err(err("axes"))?;
    root.draw(&Rectangle::new(crisp(pl, pb, pr, pb), AXIS.filled())).map_err(err("axes"))?;
    for (t, _) in &l.x.ticks {
        let x = l.x.to_px(*t, left, right).round() as i32;
        root.draw(&Rectangle::new(crisp(x, pb, x, pb + tl), AXIS.filled())).map_err(err("axes"))?;
    }
    for (t, _) in &l.y.ticks {
        let y = l.y.to_px(*t, bottom, top).round() as i32;
        root.draw(&Rectangle::new(crisp(pl - tl, y, pl, y), AXIS.filled())).map_err(err("axes"))?;
    }

    // Series, clipped to the plotting area: measured lines first, references over them, and what the plot is
    // about over everything, so neither is ever hidden.
    let area =
        root.clone().shrink((s(left), s(top)), ((s(right) - s(left)) as u32 + 1, (s(bottom) - s(top)) as u32 + 1));
    let mut chart = ChartBuilder::on(&area).build_cartesian_2d(&l.x, &l.y).map_err(err("chart"))?;
    let line_w = |w: f64| (w * k).round().max(1.0) as u32;
    let ring_w = || line_w(m.line_w);
    let of_kind = |kind| series.iter().filter(move |p| p.kind == kind);
    let drawn_order = of_kind(SeriesKind::Line)
        .chain(of_kind(SeriesKind::Points))
        .chain(of_kind(SeriesKind::Rings))
        .chain(of_kind(SeriesKind::Reference))
        .chain(of_kind(SeriesKind::Focus))
        .chain(of_kind(SeriesKind::Flagged));
    let bars = l.bars.is_some();
    for p in drawn_order {
        let (wide, big) = p.widening();
        let pts = p.points.iter().copied();
        let measured = matches!(p.kind, SeriesKind::Line | SeriesKind::Points | SeriesKind::Rings | SeriesKind::Focus);
        if bars && measured {
            // A bar from the axis' floor (0 on a linear axis) to the value, in the middle 70% of its slot.
            let base = if l.y.lo <= 0.0 && l.y.hi >= 0.0 { 0.0 } else { l.y.lo };
            for &(x, y) in &p.points {
                let corners = [(x - 0.35, base), (x + 0.35, y)];
                let fill = if p.hollow { WHITE } else { tint(p.color) };
                chart.draw_series(std::iter::once(Rectangle::new(corners, fill.filled()))).map_err(err("bars"))?;
                let outline = p.color.stroke_width(line_w(m.line_w));
                chart.draw_series(std::iter::once(Rectangle::new(corners, outline))).map_err(err("bars"))?;
            }
        } else {
            match p.kind {
                SeriesKind::Points | SeriesKind::Rings | SeriesKind::Flagged => {}
                SeriesKind::Line => {
                    let style = p.color.stroke_width(line_w(m.line_w * wide));
                    chart.draw_series(LineSeries::new(pts, style)).map_err(err("series"))?;
                }
                SeriesKind::Reference => {
                    let style = p.color.stroke_width(line_w(m.reference_w));
                    let (dash, gap) = (s(4.0 * m.reference_w), s(2.5 * m.reference_w));
                    // A bar plot's reference is a level across every bar.
                    let pts: Vec<(f64, f64)> =
                        if bars { vec![(l.x.lo, p.points[0].1), (l.x.hi, p.points[0].1)] } else { p.points.clone() };
                    chart.draw_series(DashedLineSeries::new(pts, dash, gap, style)).map_err(err("series"))?;
                }
                SeriesKind::Focus => {
                    // Long dashes with gaps wide enough to see a line with the same values underneath.
                    let style = p.color.stroke_width(line_w(m.focus_w * wide));
                    let (dash, gap) = (s(4.0 * m.focus_w), s(2.0 * m.focus_w));
                    chart.draw_series(DashedLineSeries::new(pts, dash, gap, style)).map_err(err("series"))?;
                }
            }
        }
        // Error bars: a whisker from the low to the high value, capped, in the series' colour.
        let whisker = p.color.stroke_width(line_w((0.75 * m.line_w).max(1.0)));
        let cap = s(if bars { 2.5 * m.marker_r } else { 1.6 * m.marker_r });
        for &(x, lo, hi) in &p.spread {
            chart
                .draw_series(std::iter::once(PathElement::new(vec![(x, lo), (x, hi)], whisker)))
                .map_err(err("spread"))?;
            for v in [lo, hi] {
                let (cx, cy) = chart.plotting_area().map_coordinate(&(x, v));
                if (s(top)..=s(bottom)).contains(&cy) {
                    root.draw(&PathElement::new(vec![(cx - cap, cy), (cx + cap, cy)], whisker))
                        .map_err(err("spread"))?;
                }
            }
        }
        if bars && (measured || p.kind == SeriesKind::Reference) {
            continue;
        }
        // Markers with a thin white ring, so crossing lines do not blur into them; smaller where points crowd.
        let spread = l.x.to_px(p.points[p.points.len() - 1].0, left, right) - l.x.to_px(p.points[0].0, left, right);
        let spacing = if p.points.len() > 1 { spread / (p.points.len() - 1) as f64 } else { f64::INFINITY };
        let marker_r = match (p.kind, scatter_scale(p.kind)) {
            (SeriesKind::Focus, _) => 1.4 * m.marker_r,
            (_, Some(scale)) => scale * m.marker_r * big,
            _ => (m.marker_r * big).min(0.3 * spacing.max(1.0) * big),
        };
        // A line whose points are closer than a marker (a curve over every group size 1..1024) is drawn as a line
        // alone: markers there would only blur it.
        if p.kind == SeriesKind::Line && spacing < 1.5 * m.marker_r {
            continue;
        }
        let marker_r = s(marker_r.max(1.5));
        // Markers at absolute pixels on the whole image (points lie inside the plotting area).
        for &q in &p.points {
            let c = chart.plotting_area().map_coordinate(&q);
            if !matches!(p.kind, SeriesKind::Rings | SeriesKind::Flagged) {
                draw_marker(&root, p.marker, c, marker_r + ss, WHITE).map_err(err("series"))?;
            }
            draw_sample(&root, p, c, marker_r, ring_w()).map_err(err("series"))?;
        }
    }

    // Point labels: a white box with a grey frame and a thin line to the point.
    for b in &l.labels {
        let (x0, y0, x1, y1) = (b.x, b.y, b.x + b.w, b.y + b.h);
        let near_x = b.point.0.clamp(x0, x1);
        let near_y = b.point.1.clamp(y0, y1);
        let leader = MUTED_TEXT.stroke_width(ss as u32);
        root.draw(&PathElement::new(vec![(s(b.point.0), s(b.point.1)), (s(near_x), s(near_y))], leader))
            .map_err(err("labels"))?;
        root.draw(&Rectangle::new([(s(x0), s(y0)), (s(x1), s(y1))], WHITE.filled())).map_err(err("labels"))?;
        root.draw(&Rectangle::new([(s(x0), s(y0)), (s(x1), s(y1))], FRAME.stroke_width(ss as u32)))
            .map_err(err("labels"))?;
    }

    // Legend box and its samples; the labels come with the text.
    if l.legend.place == Place::Nowhere {
        return root.present().map_err(err("image"));
    }
    let lg = &l.legend;
    let (lx, ly) = l.legend_origin;
    let (bx0, by0) = (lx.round() as i32, ly.round() as i32);
    let (bx1, by1) = ((lx + lg.box_w).round() as i32, (ly + lg.box_h).round() as i32);
    root.draw(&Rectangle::new([(bx0 * ss, by0 * ss), (bx1 * ss, by1 * ss)], WHITE.filled())).map_err(err("legend"))?;
    for frame in
        [crisp(bx0, by0, bx1, by0), crisp(bx0, by1, bx1, by1), crisp(bx0, by0, bx0, by1), crisp(bx1, by0, bx1, by1)]
    {
        root.draw(&Rectangle::new(frame, FRAME.filled())).map_err(err("legend"))?;
    }
    let scale = lg.em / m.legend_em;
    for (i, item) in l.legend_items.iter().enumerate() {
        let (x, y) = legend_entry(l, i);
        let (xa, xb, yc) = (s(x), s(x + lg.sample_w), s(y));
        let p = match item.sample {
            Sample::Heading => continue,
            Sample::Marker(style) => {
                let stand_in = Prepared {
                    label: "",
                    kind: SeriesKind::Points,
                    color: style.color,
                    marker: style.marker,
                    hollow: style.hollow,
                    points: Vec::new(),
                    spread: Vec::new(),
                    under: 0,
                };
                let r = s(m.marker_r * scale * scatter_scale(SeriesKind::Points).unwrap_or(1.0));
                draw_sample(&root, &stand_in, ((xa + xb) / 2, yc), r, ring_w()).map_err(err("legend"))?;
                continue;
            }
            Sample::Series(i) => &series[i],
        };
        let (wide, big) = p.widening();
        if bars && matches!(p.kind, SeriesKind::Line | SeriesKind::Points | SeriesKind::Rings | SeriesKind::Focus) {
            let box_ = [(xa, yc - s(0.45 * lg.row_h)), (xb, yc + s(0.45 * lg.row_h))];
            root.draw(&Rectangle::new(box_, tint(p.color).filled())).map_err(err("legend"))?;
            continue;
        }
        match p.kind {
            SeriesKind::Points | SeriesKind::Rings | SeriesKind::Flagged => {}
            SeriesKind::Line => {
                let style = p.color.stroke_width(line_w(m.line_w * scale * wide));
                root.draw(&PathElement::new(vec![(xa, yc), (xb, yc)], style)).map_err(err("legend"))?;
            }
            SeriesKind::Reference | SeriesKind::Focus => {
                // Two dashes, as on the chart.
                let w = if p.kind == SeriesKind::Focus { m.focus_w } else { m.reference_w };
                let style = p.color.stroke_width(line_w(w * scale));
                let third = (xb - xa) / 3;
                root.draw(&PathElement::new(vec![(xa, yc), (xa + third, yc)], style)).map_err(err("legend"))?;
                root.draw(&PathElement::new(vec![(xb - third, yc), (xb, yc)], style)).map_err(err("legend"))?;
            }
        }
        let r = s(m.marker_r * scale * scatter_scale(p.kind).unwrap_or(1.0) * big);
        draw_sample(&root, p, ((xa + xb) / 2, yc), r, ring_w()).map_err(err("legend"))?;
    }
    root.present().map_err(err("image"))
}

/// The left end and vertical middle of legend entry `i`'s sample line, in final pixels.
fn legend_entry(l: &Layout, i: usize) -> (f64, f64) {
    let lg = &l.legend;
    let (col, row) = lg.positions.get(i).copied().unwrap_or((0, i));
    let x = l.legend_origin.0 + lg.inner_pad + lg.col_x.get(col).copied().unwrap_or_default();
    let y = l.legend_origin.1 + lg.inner_pad + (row as f64 + 0.5) * lg.row_h;
    (x, y)
}

/// A bar's value as printed over it: three significant digits.
fn bar_value(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format_plain(v);
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// All text, at the final size, over the downsampled shapes.
fn draw_text(
    canvas: &mut Canvas<'_>,
    plot: &LinePlot,
    series: &[Prepared<'_>],
    ts: &Typesetter,
    l: &Layout,
    m: &Metrics,
) {
    let w = f64::from(canvas.width);
    let (left, top, right, bottom) = l.plot;
    let top_centre = (HAlign::Center, VAlign::Top);

    let mut y = m.pad;
    for line in &l.title {
        ts.draw(canvas, line, m.title_em, TEXT, (w / 2.0, y), top_centre, false);
        y += l.title_lh;
    }
    for line in &l.subtitle {
        ts.draw(canvas, line, m.subtitle_em, MUTED_TEXT, (w / 2.0, y), top_centre, false);
        y += l.subtitle_lh;
    }

    // Tick labels (a bar plot: each bar's label under it and its value over it), the x label under them, the y
    // label upright on the far left.
    let x_label_top = bottom + m.tick_len + 0.5 * m.tick_em;
    let mut x_desc_top = x_label_top + 1.3 * m.tick_em + 0.7 * m.tick_em;
    match &l.bars {
        Some(bars) => {
            let measured = series.iter().filter(|p| {
                matches!(p.kind, SeriesKind::Line | SeriesKind::Points | SeriesKind::Rings | SeriesKind::Focus)
            });
            let value_em = 0.9 * m.tick_em;
            for (p, lines) in measured.zip(&bars.labels) {
                let Some(&(x, v)) = p.points.first() else { continue };
                let cx = l.x.to_px(x, left, right);
                for (i, line) in lines.iter().enumerate() {
                    let y = x_label_top + i as f64 * 1.25 * bars.em;
                    ts.draw(canvas, line, bars.em, TEXT, (cx, y), top_centre, false);
                }
                // Over the bar, or over its error bar's top.
                let high = p.spread.iter().map(|b| b.2).fold(v, f64::max);
                let value = match plot.y_axis {
                    Axis::Linear => v,
                    Axis::Log2 => 2f64.powf(v),
                    Axis::Log10 => 10f64.powf(v),
                };
                let vy = (l.y.to_px(high, bottom, top) - 0.4 * value_em - value_em).max(top);
                ts.draw(canvas, &bar_value(value), value_em, TEXT, (cx, vy), top_centre, false);
            }
            let lines = bars.labels.iter().map(Vec::len).max().unwrap_or(1).max(1);
            x_desc_top = x_label_top + lines as f64 * 1.25 * bars.em + 0.7 * m.tick_em;
        }
        None if !l.categories.is_empty() => {
            for ((t, _), lines) in l.x.ticks.iter().zip(&l.categories) {
                let x = l.x.to_px(*t, left, right);
                for (i, line) in lines.iter().enumerate() {
                    ts.draw(
                        canvas,
                        line,
                        m.tick_em,
                        TEXT,
                        (x, x_label_top + i as f64 * 1.25 * m.tick_em),
                        top_centre,
                        false,
                    );
                }
            }
            let lines = l.categories.iter().map(Vec::len).max().unwrap_or(1).max(1);
            x_desc_top = x_label_top + lines as f64 * 1.25 * m.tick_em + 0.7 * m.tick_em;
        }
        None => {
            for (t, label) in &l.x.ticks {
                let x = l.x.to_px(*t, left, right);
                ts.draw(canvas, label, m.tick_em, TEXT, (x, x_label_top), top_centre, false);
            }
        }
    }
    for (t, label) in &l.y.ticks {
        let y = l.y.to_px(*t, bottom, top);
        let anchor = (left - m.tick_len - 0.5 * m.tick_em, y);
        ts.draw(canvas, label, m.tick_em, TEXT, anchor, (HAlign::Right, VAlign::Middle), false);
    }
    let x_label = match &l.bars {
        Some(bars) => {
            format!("{} = {} (the one value in these rows: one bar per series)", plot.x_label, format_plain(bars.x))
        }
        None => plot.x_label.clone(),
    };
    ts.draw(canvas, &x_label, m.axis_em, TEXT, ((left + right) / 2.0, x_desc_top), top_centre, false);
    let y_desc_x = m.pad + 0.5 * m.axis_em;
    let middle = (HAlign::Center, VAlign::Middle);
    ts.draw(canvas, &plot.y_label, m.axis_em, TEXT, (y_desc_x, (top + bottom) / 2.0), middle, true);

    for (i, item) in l.legend_items.iter().enumerate() {
        let (x, y) = legend_entry(l, i);
        let x = match item.sample {
            Sample::Heading => x,
            _ => x + l.legend.sample_w + 0.6 * l.legend.em,
        };
        ts.draw(canvas, &item.label, l.legend.em, TEXT, (x, y), (HAlign::Left, VAlign::Middle), false);
    }

    for b in &l.labels {
        let anchor = (b.x + 0.35 * b.em, b.y + b.h / 2.0);
        ts.draw(canvas, &b.text, b.em, TEXT, anchor, (HAlign::Left, VAlign::Middle), false);
    }

    let mut y = l.note_top;
    for line in &l.note {
        ts.draw(canvas, line, m.note_em, MUTED_TEXT, (m.pad, y), (HAlign::Left, VAlign::Top), false);
        y += l.note_lh;
    }
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GFLOP/s of 3 kernels and a vendor reference over N = 256..4096, as the matmul experiment would plot them.
    fn fixture() -> LinePlot {
        let sizes = [256.0, 512.0, 1024.0, 2048.0, 4096.0];
        let kernel = |scale: f64| sizes.iter().map(|&n: &f64| (n, scale * n.log2())).collect::<Vec<_>>();
        LinePlot {
            title: "SGEMM on test device (gfx90a, wave64), run fixture".to_owned(),
            subtitle: Some("median of 10 runs".to_owned()),
            x_label: "matrix size N (M = N = K)".to_owned(),
            y_label: "GFLOP/s".to_owned(),
            x_axis: Axis::Log2,
            y_axis: Axis::Linear,
            series: vec![
                Series::line("naive", kernel(10.0)),
                Series::line("accumulator", kernel(40.0)),
                Series::line("tiled M=16", kernel(300.0)),
                Series::reference("rocBLAS", kernel(2000.0)),
            ],
            note: Some("rocBLAS SGEMM uses matrix cores on CDNA; these kernels use plain FMA".to_owned()),
            y_max: None,
            ..LinePlot::default()
        }
    }

    /// Decodes a PNG into (width, height, RGB bytes).
    fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes)).read_info().expect("a valid PNG header");
        let mut buf = vec![0; reader.output_buffer_size().expect("a buffer size")];
        let info = reader.next_frame(&mut buf).expect("valid PNG data");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    }

    fn render(plot: &LinePlot, w: u32, h: u32) -> (Vec<u8>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("plot.png");
        render_png(plot, &path, w, h).expect("the plot renders");
        (std::fs::read(&path).expect("the PNG was written"), dir)
    }

    /// Pixels in rows `y0..y1` that are not white.
    fn ink(rgb: &[u8], w: u32, y0: u32, y1: u32) -> usize {
        let row = w as usize * 3;
        rgb[y0 as usize * row..y1 as usize * row].chunks(3).filter(|p| p != &[255, 255, 255]).count()
    }

    #[test]
    fn fixture_renders_a_png_of_the_requested_size_with_content() {
        let (bytes, _dir) = render(&fixture(), 900, 600);
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let (w, h, rgb) = decode(&bytes);
        assert_eq!((w, h), (900, 600));
        // The plotting area (middle of the image) holds lines, markers and grid in several colours.
        let colours: std::collections::BTreeSet<&[u8]> = rgb.chunks(3).collect();
        assert!(colours.len() > 20, "only {} distinct colours", colours.len());
        assert!(ink(&rgb, w, h / 4, 3 * h / 4) > 5_000);
        // Every palette colour used by a line appears somewhere.
        for c in [PALETTE[0], PALETTE[1], PALETTE[2]] {
            assert!(colours.contains(&[c.0, c.1, c.2][..]), "colour {c:?} missing");
        }
    }

    #[test]
    fn output_is_deterministic() {
        let (a, _d1) = render(&fixture(), 640, 480);
        let (b, _d2) = render(&fixture(), 640, 480);
        assert!(a == b, "two renders of the same plot differ");
    }

    #[test]
    fn title_text_is_drawn_with_the_bundled_font() {
        // Two one-line titles give the same layout, so the images differ only where the title's glyphs are.
        let mut short = fixture();
        short.title = "x".to_owned();
        let (a, _d1) = render(&fixture(), 800, 500);
        let (b, _d2) = render(&short, 800, 500);
        let ((w, h, a), (_, _, b)) = (decode(&a), decode(&b));
        let m = Metrics::new(w, h);
        let band = (m.pad + 1.3 * m.title_em).ceil() as usize;
        let differing_rows: Vec<usize> = (0..h as usize)
            .filter(|&y| {
                let row = y * w as usize * 3..(y + 1) * w as usize * 3;
                a[row.clone()] != b[row]
            })
            .collect();
        assert!(!differing_rows.is_empty(), "the title did not change the image");
        assert!(differing_rows.iter().all(|&y| y < band), "rows {differing_rows:?} outside the title band 0..{band}");
        assert!(ink(&a, w, 0, band as u32) > 10 * ink(&b, w, 0, band as u32), "the long title has little ink");
    }

    #[test]
    fn single_point_and_partly_invalid_series_are_drawn() {
        let mut plot = fixture();
        plot.series = vec![
            Series::line("one point", vec![(1024.0, 500.0)]),
            Series::line("with gaps", vec![(256.0, f64::NAN), (512.0, 100.0), (f64::INFINITY, 1.0), (2048.0, 300.0)]),
            // -1 cannot sit on a log2 axis; the other points still can.
            Series::line("negative x", vec![(-1.0, 10.0), (4096.0, 50.0)]),
        ];
        let (bytes, _dir) = render(&plot, 640, 480);
        let (_, _, rgb) = decode(&bytes);
        let colours: std::collections::BTreeSet<&[u8]> = rgb.chunks(3).collect();
        let c = PALETTE[0];
        assert!(colours.contains(&[c.0, c.1, c.2][..]), "the single point is not drawn");
    }

    /// Where data point `p` lands in the final image of `plot` at `w` x `h`, in whole pixels.
    fn pixel_of(plot: &LinePlot, w: u32, h: u32, (x, y): (f64, f64)) -> (u32, u32) {
        let plot = &normalised(plot);
        let path = Path::new("test.png");
        let series = prepare(plot, path).expect("drawable series");
        let ts = Typesetter::new(typeface(path).expect("the bundled font"));
        let l = layout(plot, &series, &ts, &Metrics::new(w, h), w, h, path).expect("a layout");
        let (left, top, right, bottom) = l.plot;
        let px = l.x.to_px(to_axis(plot.x_axis, x).expect("x on the axis"), left, right);
        let py = l.y.to_px(to_axis(plot.y_axis, y).expect("y on the axis"), bottom, top);
        (px.round() as u32, py.round() as u32)
    }

    fn colour_at(rgb: &[u8], w: u32, (x, y): (u32, u32)) -> [u8; 3] {
        let i = (y as usize * w as usize + x as usize) * 3;
        [rgb[i], rgb[i + 1], rgb[i + 2]]
    }

    fn rgb(c: RGBColor) -> [u8; 3] {
        [c.0, c.1, c.2]
    }

    /// Pixels of exactly colour `c` in the rectangle `x0..x1` x `y0..y1`.
    fn count(rgb: &[u8], w: u32, (x0, y0, x1, y1): (u32, u32, u32, u32), c: [u8; 3]) -> usize {
        (y0..y1).flat_map(|y| (x0..x1).map(move |x| (x, y))).filter(|&p| colour_at(rgb, w, p) == c).count()
    }

    #[test]
    fn every_axis_kind_puts_each_point_where_its_axis_says() {
        for (x_axis, y_axis) in [
            (Axis::Linear, Axis::Linear),
            (Axis::Log10, Axis::Log10),
            (Axis::Log2, Axis::Log2),
            (Axis::Linear, Axis::Log10),
        ] {
            let mut plot = fixture();
            plot.x_axis = x_axis;
            plot.y_axis = y_axis;
            // One series, so no other marker can cover its points.
            plot.series.truncate(1);
            let (bytes, _dir) = render(&plot, 800, 600);
            let (w, h, img) = decode(&bytes);
            let mut xs = Vec::new();
            for &p in &plot.series[0].points {
                let at = pixel_of(&plot, w, h, p);
                assert_eq!(colour_at(&img, w, at), rgb(PALETTE[0]), "{x_axis:?}/{y_axis:?}: no marker at {p:?}");
                xs.push(at.0);
            }
            // Sizes that double are evenly spaced on a log axis, and not on a linear one.
            let gaps: Vec<i64> = xs.windows(2).map(|p| i64::from(p[1]) - i64::from(p[0])).collect();
            let even = gaps.iter().all(|g| (g - gaps[0]).abs() <= 1);
            assert_eq!(even, x_axis != Axis::Linear, "{x_axis:?}: x gaps {gaps:?}");
        }
    }

    /// The series a plot is about and a line with the very same values (the occupancy plots' case) are drawn as one,
    /// in the focus' colour (in no palette), named for both; it is thicker than a line and its markers win.
    #[test]
    fn the_focus_series_is_drawn_last_and_stays_visible() {
        let pts: Vec<(f64, f64)> = (5..=10).map(|k| (f64::from(1u32 << k), if k < 8 { 100.0 } else { 50.0 })).collect();
        let mut plot = fixture();
        plot.series = vec![
            Series::focus("theoretical occupancy", pts.clone()),
            Series::line("occupied lanes", pts.clone()),
            Series::line("bandwidth", pts.iter().map(|&(x, y)| (x, 0.4 * y)).collect()),
        ];
        assert!(!PALETTE.contains(&FOCUS) && !REFERENCE_PALETTE.contains(&FOCUS));
        let (bytes, _dir) = render(&plot, 1000, 700);
        let (w, h, img) = decode(&bytes);
        for &p in &pts {
            assert_eq!(colour_at(&img, w, pixel_of(&plot, w, h, p)), rgb(FOCUS), "focus marker hidden at {p:?}");
        }
        let drawn = normalised(&plot);
        assert_eq!(drawn.series[0].label, "theoretical occupancy and occupied lanes (identical)");
        assert_eq!(drawn.series.len(), 2);
        // Along the flat stretch at 100%, between the first two markers: the focus' dashes.
        let (x0, y) = pixel_of(&plot, w, h, pts[0]);
        let (x1, _) = pixel_of(&plot, w, h, pts[1]);
        let band = (x0 + 12, y - 3, x1 - 12, y + 4);
        let focus = count(&img, w, band, rgb(FOCUS));
        if let Some(out) = std::env::var_os("SUITE_PLOT_EXAMPLE") {
            std::fs::write(out, &bytes).expect("the example copy is written");
        }
        assert!(2 * focus > 3 * (x1 - x0 - 24) as usize, "the focus line is thin or missing: {focus} px");
        // The focus line is thicker than a line: compare column heights at the bandwidth line's flat stretch.
        let thickness =
            |c: [u8; 3], y: u32| (y - 10..y + 10).filter(|&yy| colour_at(&img, w, (x0 + 20, yy)) == c).count();
        let (_, y_bw) = pixel_of(&plot, w, h, (pts[0].0, 40.0));
        let focus_column = (0..30)
            .map(|dx| (y - 10..y + 10).filter(|&yy| colour_at(&img, w, (x0 + 12 + dx, yy)) == rgb(FOCUS)).count());
        assert!(focus_column.max().unwrap_or(0) > thickness(rgb(PALETTE[0]), y_bw), "focus not thicker than a line");
        // The legend shows the focus colour too, right of the plotting area.
        let legend = (3 * w / 5, 0, w, h / 2);
        assert!(count(&img, w, legend, rgb(FOCUS)) > 20, "no focus sample in the legend");
    }

    /// Two runs with the same values (a compare roofline of a run against itself): the first run's filled point
    /// stays at the centre, the second run's ring is drawn around it, and both are in the legend.
    #[test]
    fn rings_around_points_at_the_same_place_leave_both_visible() {
        let pts = vec![(1.0, 10.0), (10.0, 100.0), (100.0, 1000.0)];
        let mut plot = fixture();
        plot.x_axis = Axis::Log10;
        plot.y_axis = Axis::Log10;
        plot.series = vec![Series::rings("run 2", pts.clone()), Series::points("run 1", pts.clone())];
        let (bytes, _dir) = render(&plot, 1000, 700);
        if let Some(out) = std::env::var_os("SUITE_PLOT_EXAMPLE") {
            std::fs::write(out, &bytes).expect("the example copy is written");
        }
        let (w, h, img) = decode(&bytes);
        // Colours are taken in series order: the rings PALETTE[0], the points PALETTE[1].
        let (ring, point) = (rgb(PALETTE[0]), rgb(PALETTE[1]));
        for &p in &pts {
            let (x, y) = pixel_of(&plot, w, h, p);
            assert_eq!(colour_at(&img, w, (x, y)), point, "the filled point is covered at {p:?}");
            // The ring is a thin anti-aliased line: count pixels near its colour.
            let near_ring = |(x0, y0, x1, y1): (u32, u32, u32, u32)| {
                (y0..y1)
                    .flat_map(|yy| (x0..x1).map(move |xx| (xx, yy)))
                    .filter(|&q| colour_at(&img, w, q).iter().zip(ring).all(|(a, b)| a.abs_diff(b) < 48))
                    .count()
            };
            assert!(near_ring((x - 20, y - 20, x + 21, y + 21)) > 15, "no ring around {p:?}");
            // A ring, not a disc: its colour is not inside the point.
            assert_eq!(near_ring((x - 2, y - 2, x + 3, y + 3)), 0, "the ring is filled at {p:?}");
        }
        let legend = (3 * w / 5, 0, w, h / 2);
        assert!(count(&img, w, legend, point) > 10, "no sample of the points in the legend");
    }

    /// Points measured while the GPU was throttled get a thick red ring: around them and not around the others, the
    /// point inside still its series' colour, the other series' colours unchanged, and a red sample in the legend.
    #[test]
    fn flagged_points_get_a_red_ring_and_the_rest_stay_as_they_were() {
        let pts = vec![(256.0, 100.0), (512.0, 200.0), (1024.0, 300.0), (2048.0, 400.0)];
        let mut plot = fixture();
        plot.series = vec![
            Series::line("kernel", pts.clone()),
            Series::reference("vendor", pts.iter().map(|&(x, y)| (x, 1.5 * y)).collect()),
            Series::flagged("ringed: throttled", vec![pts[1], pts[3]]),
        ];
        assert!(![&PALETTE[..], &REFERENCE_PALETTE[..], &[FOCUS]].concat().contains(&FLAGGED));
        let (bytes, _dir) = render(&plot, 1000, 700);
        if let Some(out) = std::env::var_os("SUITE_PLOT_EXAMPLE") {
            std::fs::write(out, &bytes).expect("the example copy is written");
        }
        let (w, h, img) = decode(&bytes);
        let red_near = |(x, y): (u32, u32)| count(&img, w, (x - 25, y - 25, x + 26, y + 26), rgb(FLAGGED));
        for (i, &p) in pts.iter().enumerate() {
            let c = pixel_of(&plot, w, h, p);
            let ringed = i % 2 == 1;
            // A ring of radius about 11 px, 4 px wide: well over 100 pixels of pure red; none where there is no ring.
            assert_eq!(red_near(c) > 100, ringed, "{p:?}: {} red pixels", red_near(c));
            if ringed {
                assert_eq!(count(&img, w, (c.0 - 3, c.1 - 3, c.0 + 4, c.1 + 4), rgb(FLAGGED)), 0, "a ring, not a disc");
            }
            // The point inside keeps its series' colour.
            assert_eq!(colour_at(&img, w, c), rgb(PALETTE[0]), "{p:?}");
        }
        // The legend has a red sample, and the flagged series takes no palette colour: the kernel is still the first.
        let legend = (3 * w / 5, 0, w, h / 2);
        assert!(count(&img, w, legend, rgb(FLAGGED)) > 20, "no ring in the legend");
        let series = prepare(&plot, Path::new("x.png")).expect("drawable");
        assert_eq!((series[0].color, series[2].color), (PALETTE[0], FLAGGED));
    }

    #[test]
    fn y_max_caps_the_axis_and_clips_what_is_above() {
        let mut plot = fixture();
        plot.y_axis = Axis::Linear;
        plot.series = vec![
            Series::line("outlier", vec![(256.0, 1000.0), (512.0, 50.0), (1024.0, 60.0)]),
            Series::reference("vendor", vec![(256.0, 100.0), (1024.0, 100.0)]),
        ];
        plot.y_max = Some(150.0);
        let path = Path::new("capped.png");
        let series = prepare(&plot, path).expect("drawable");
        let ts = Typesetter::new(typeface(path).expect("font"));
        let l = layout(&plot, &series, &ts, &Metrics::new(800, 600), 800, 600, path).expect("a layout");
        assert!(l.y.hi >= 150.0 && l.y.hi < 160.0, "top of the axis {}", l.y.hi);
        assert!(l.y.ticks.iter().all(|t| t.0 <= 150.0), "ticks above the cap: {:?}", l.y.ticks);
        let (bytes, _dir) = render(&plot, 800, 600);
        let (w, h, img) = decode(&bytes);
        // The 50 and 60 points sit in the lower half, not squashed at the bottom as a 0..1000 axis would put them.
        let (_, y50) = pixel_of(&plot, w, h, (512.0, 50.0));
        let (_, top, _, bottom) = l.plot;
        assert!(f64::from(y50) < bottom - 0.25 * (bottom - top), "50 is drawn at row {y50}");
        assert_eq!(colour_at(&img, w, pixel_of(&plot, w, h, (512.0, 50.0))), rgb(PALETTE[0]));
    }

    #[test]
    fn extreme_values_are_drawn_or_refused_without_panic() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let mut plot = fixture();
        plot.x_axis = Axis::Linear;
        plot.series = vec![Series::line("half of f64", vec![(1.0, f64::MAX / 2.0), (2.0, -f64::MAX / 2.0)])];
        render_png(&plot, &dir.path().join("half.png"), 640, 480).expect("half the f64 range renders");
        plot.series = vec![Series::line("all of f64", vec![(1.0, f64::MAX), (2.0, -f64::MAX)])];
        let e = render_png(&plot, &dir.path().join("huge.png"), 640, 480).expect_err("the span overflows");
        assert!(matches!(e, Error::Range { axis: "y", .. }), "{e}");
        plot.series = vec![Series::line("tiny to huge", vec![(1e-300, 1e-300), (1e300, 1e300)])];
        plot.x_axis = Axis::Log10;
        plot.y_axis = Axis::Log2;
        render_png(&plot, &dir.path().join("wide.png"), 640, 480).expect("a wide log range renders");
    }

    #[test]
    fn empty_plot_is_an_error_naming_the_file() {
        let mut plot = fixture();
        plot.series.clear();
        let path = Path::new("/nonexistent-dir/empty.png");
        let e = render_png(&plot, path, 640, 480).expect_err("an empty plot must fail");
        assert!(matches!(e, Error::NoSeries { .. }), "{e}");
        assert!(e.to_string().contains("/nonexistent-dir/empty.png"), "{e}");
    }

    #[test]
    fn all_nan_or_empty_series_is_an_error_naming_the_series() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("nan.png");
        for points in [vec![(256.0, f64::NAN), (512.0, f64::NAN)], vec![]] {
            let mut plot = fixture();
            plot.series.push(Series::line("broken", points));
            let e = render_png(&plot, &path, 640, 480).expect_err("a series with nothing to draw must fail");
            assert!(matches!(&e, Error::EmptySeries { label, .. } if label == "broken"), "{e}");
            assert!(e.to_string().contains("nan.png"), "{e}");
        }
        assert!(!path.exists(), "nothing is written on error");
    }

    #[test]
    fn unwritable_path_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let path = dir.path().join("missing-folder").join("plot.png");
        let e = render_png(&fixture(), &path, 640, 480).expect_err("writing into a missing folder must fail");
        assert!(matches!(e, Error::Write { .. }), "{e}");
        assert!(e.to_string().contains("missing-folder/plot.png"), "{e}");
    }

    #[test]
    fn out_of_range_or_crowded_image_size_is_an_error() {
        for (w, h) in [(100, 100), (320, 100_000)] {
            let e = render_png(&fixture(), Path::new("odd.png"), w, h).expect_err("an out-of-range size must fail");
            assert!(matches!(e, Error::Size { .. }), "{e}");
            assert!(e.to_string().contains("odd.png"), "{e}");
        }
        // 30 long labels do not fit beside a small chart.
        let mut crowded = fixture();
        crowded.series = (0..30)
            .map(|i| Series::line(format!("a rather long kernel name {i}"), vec![(1.0, 1.0), (2.0, f64::from(i))]))
            .collect();
        let e = render_png(&crowded, Path::new("crowded.png"), 400, 300).expect_err("the legend cannot fit");
        assert!(e.to_string().contains("legend of 30 series"), "{e}");
    }

    #[test]
    fn log2_ticks_are_the_powers_of_two_present_as_plain_integers() {
        let spec = log_axis(2.0, 256f64.log2(), 8192f64.log2(), 12);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["256", "512", "1024", "2048", "4096", "8192"]);
        // Not starting at a power: 300..5000 has 512..4096.
        let spec = log_axis(2.0, 300f64.log2(), 5000f64.log2(), 12);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["512", "1024", "2048", "4096"]);
        // Too many powers for the room: every other one; past 8192 the whole axis reads 2^k.
        let spec = log_axis(2.0, 0.0, 20.0, 11);
        assert!(spec.ticks.len() <= 11);
        assert_eq!(spec.ticks[1].1, "2^2");
        let spec = log_axis(2.0, 15.0, 25.0, 12);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["2^15", "2^16", "2^17", "2^18", "2^19", "2^20", "2^21", "2^22", "2^23", "2^24", "2^25"]);
    }

    #[test]
    fn log10_axes_label_every_decade_even_when_room_is_short() {
        let spec = log_axis(10.0, -2.0, 6.0, 4);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0.01", "0.1", "1", "10", "100", "1000", "10000", "100000", "1000000"]);
    }

    #[test]
    fn log10_ticks_use_decades_or_one_two_five() {
        let labels = |spec: AxisSpec| spec.ticks.into_iter().map(|(_, l)| l).collect::<Vec<_>>();
        // Three decades: 1-2-5 steps.
        assert_eq!(
            labels(log_axis(10.0, 50f64.log10(), 5e4f64.log10(), 20)),
            ["50", "100", "200", "500", "1000", "2000", "5000", "10000", "20000", "50000"]
        );
        // Many decades: the powers, past a million as 1e7.
        assert_eq!(
            labels(log_axis(10.0, 1.0, 9.0, 20)),
            ["10", "100", "1000", "10000", "100000", "1000000", "1e7", "1e8", "1e9"]
        );
        // Within one decade: every digit.
        assert_eq!(labels(log_axis(10.0, 3f64.log10(), 9f64.log10(), 20)), ["3", "4", "5", "6", "7", "8", "9"]);
    }

    #[test]
    fn linear_y_starts_at_zero_with_nice_ticks() {
        let spec = axis_spec(Axis::Linear, 50.0, 50_000.0, true, 10);
        assert_eq!(spec.lo, 0.0);
        assert!(spec.hi >= 50_000.0);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "10000", "20000", "30000", "40000", "50000"]);
        let spec = axis_spec(Axis::Linear, 0.1, 0.9, true, 10);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["0", "0.2", "0.4", "0.6", "0.8"]);
    }

    #[test]
    fn bundled_font_metrics() {
        let ts = Typesetter::new(typeface(Path::new("-")).expect("the bundled font parses"));
        assert_eq!(ts.units_per_em, 2048.0);
        // DejaVu Sans capitals are 1493 of 2048 units tall.
        assert!((ts.cap_height - 1493.0 / 2048.0).abs() < 1e-3, "cap height {}", ts.cap_height);
        // Kerning and advances: "AV" is narrower than "A" plus "V".
        assert!(ts.width(20.0, "AV") < ts.width(20.0, "A") + ts.width(20.0, "V"));
        assert!((ts.width(20.0, "0000") - 4.0 * ts.width(20.0, "0")).abs() < 1e-3);
    }

    #[test]
    fn plain_number_formatting() {
        for (v, s) in [(0.0, "0"), (8192.0, "8192"), (0.5, "0.5"), (0.125, "0.125"), (1.5e-7, "1.5e-7"), (-3.0, "-3")] {
            assert_eq!(format_plain(v), s);
        }
    }

    /// Series with the same points are one line in the legend, naming each; the plot as drawn has one series.
    #[test]
    fn identical_series_are_merged_under_a_label_naming_each() {
        let pts = vec![(256.0, 10.0), (512.0, 20.0), (1024.0, 30.0)];
        let mut plot = fixture();
        plot.series = vec![
            Series::line("gfx90a", pts.clone()),
            Series::line("other", vec![(256.0, 5.0), (1024.0, 7.0)]),
            Series::line("gfx1100-wave64", pts.clone()),
            Series::reference("peak", vec![(256.0, 40.0), (1024.0, 40.0)]),
        ];
        let drawn = normalised(&plot);
        let labels: Vec<&str> = drawn.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["gfx90a and gfx1100-wave64 (identical)", "other", "peak"]);
        assert_eq!(legend_entries(&plot), 3);
        assert!(hidden_series(&plot).is_empty());
        render(&plot, 800, 500);
        // A line identical to the series the plot is about joins it, which keeps its kind.
        plot.series = vec![Series::line("lanes", pts.clone()), Series::focus("theoretical", pts.clone())];
        let drawn = normalised(&plot);
        assert_eq!(drawn.series.len(), 1);
        assert_eq!(
            (drawn.series[0].label.as_str(), drawn.series[0].kind),
            ("theoretical and lanes (identical)", SeriesKind::Focus)
        );
    }

    /// A line that a later one covers along part of its length is drawn wider, so it shows on both sides of the
    /// one over it there (the static comparison's gfx90a under gfx1100-wave64 wherever they agree).
    #[test]
    fn a_line_covered_in_part_is_drawn_wider_and_shows_around_the_one_over_it() {
        let under = vec![(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 35.0)];
        let over = vec![(1.0, 10.0), (2.0, 20.0), (3.0, 12.0), (4.0, 15.0)];
        let mut plot = fixture();
        plot.x_axis = Axis::Linear;
        plot.series = vec![Series::line("wave64 part", under.clone()), Series::line("other part", over)];
        let series = prepare(&plot, Path::new("-")).expect("drawable");
        assert_eq!((series[0].under, series[1].under), (1, 0));
        assert!(hidden_series(&plot).is_empty());
        let (w, h) = DEFAULT_SIZE;
        let (bytes, _dir) = render(&plot, w, h);
        let (w, h, img) = decode(&bytes);
        // Around the middle of the shared segment: the line drawn over it, and the wider one on both sides.
        let (xa, ya) = pixel_of(&plot, w, h, (1.5, 15.0));
        let above = count(&img, w, (xa - 2, ya - 6, xa + 3, ya - 1), rgb(PALETTE[0]));
        let below = count(&img, w, (xa - 2, ya + 2, xa + 3, ya + 7), rgb(PALETTE[0]));
        assert!(
            above > 0 && below > 0,
            "the covered line does not show around the other: {above} above, {below} below"
        );
        // Where the lines part, the covered one is still drawn (its own segment).
        let (xb, yb) = pixel_of(&plot, w, h, (3.5, 32.5));
        assert!(count(&img, w, (xb - 3, yb - 3, xb + 4, yb + 4), rgb(PALETTE[0])) > 5);
        // Without the fix both would be as wide: `hidden_series` would name the pair.
        let mut alike = prepare(&plot, Path::new("-")).expect("drawable");
        alike[0].under = 0;
        assert!(coincide(&alike[0], &alike[1]));
    }

    /// A plot whose series all have one and the same x is drawn as bars, one per series, labelled under them; the
    /// legend keeps only the reference.
    #[test]
    fn a_plot_with_one_x_is_drawn_as_bars() {
        let mut plot = fixture();
        plot.x_axis = Axis::Linear;
        plot.y_axis = Axis::Linear;
        plot.series = vec![
            Series::line("full forest", vec![(8.0, 3.0)]).with_spread(vec![(8.0, 2.5, 3.4)]),
            Series::line("tilted forest", vec![(8.0, 2.0)]),
            Series::line("chain", vec![(8.0, 0.8)]),
            Series::reference("1.0 = as fast", vec![(8.0, 1.0), (8.0, 1.0)]),
        ];
        assert_eq!(single_x(&plot), Some(8.0));
        assert_eq!(legend_entries(&plot), 1);
        let (w, h) = DEFAULT_SIZE;
        let (bytes, _dir) = render(&plot, w, h);
        let (w, h, img) = decode(&bytes);
        let path = Path::new("-");
        let series = prepare(&plot, path).expect("drawable");
        let ts = Typesetter::new(typeface(path).expect("font"));
        let l = layout(&plot, &series, &ts, &Metrics::new(w, h), w, h, path).expect("a layout");
        assert!(l.bars.is_some() && l.x.ticks.is_empty());
        let (left, top, right, bottom) = l.plot;
        // Each bar's middle, half way up, is its series' colour, tinted.
        for (i, value) in [3.0, 2.0, 0.8].into_iter().enumerate() {
            let x = l.x.to_px(i as f64 + 0.5, left, right).round() as u32;
            let y = l.y.to_px(0.7 * value, bottom, top).round() as u32;
            assert_eq!(colour_at(&img, w, (x, y)), rgb(tint(PALETTE[i])), "bar {i}");
        }
        // The first bar's error bar reaches above the bar.
        let x = l.x.to_px(0.5, left, right).round() as u32;
        let y = l.y.to_px(3.3, bottom, top).round() as u32;
        assert_eq!(colour_at(&img, w, (x, y)), rgb(PALETTE[0]), "no whisker above the bar");
    }

    /// Error bars span each point's spread, in its series' colour.
    #[test]
    fn error_bars_span_the_spread() {
        let mut plot = fixture();
        plot.x_axis = Axis::Linear;
        plot.series = vec![Series::line("kernel", vec![(1.0, 50.0), (2.0, 60.0)])
            .with_spread(vec![(1.0, 30.0, 70.0), (2.0, 58.0, 61.0)])];
        let (bytes, _dir) = render(&plot, 900, 600);
        let (w, h, img) = decode(&bytes);
        // The whisker is about a pixel wide and may fall between two: look for its colour across three.
        let c = rgb(PALETTE[0]);
        let near = |(x, y): (u32, u32)| {
            (x - 1..=x + 1).any(|x| colour_at(&img, w, (x, y)).iter().zip(c).all(|(a, b)| a.abs_diff(b) < 40))
        };
        let (x, y35) = pixel_of(&plot, w, h, (1.0, 35.0));
        let (_, y65) = pixel_of(&plot, w, h, (1.0, 65.0));
        let (_, y75) = pixel_of(&plot, w, h, (1.0, 75.0));
        assert!(near((x, y35)), "no bar down to 30");
        assert!(near((x, y65)), "no bar up to 70");
        assert!(!near((x, y75)), "a bar past 70");
    }

    /// A legend too wide for a column beside the chart (over 30% of the image) goes under it, and the chart keeps
    /// the width.
    #[test]
    fn a_legend_too_wide_for_the_side_goes_under_the_chart() {
        let mut plot = fixture();
        plot.series = (0..3)
            .map(|i| {
                Series::line(
                    format!("{i}: H100 80GB HBM3, warp32 [2026-11-25-h100-sm_90-quick-counters-issues25-27]"),
                    vec![(256.0, f64::from(i)), (512.0, f64::from(i + 1))],
                )
            })
            .collect();
        let (w, h) = DEFAULT_SIZE;
        let path = Path::new("-");
        let series = prepare(&plot, path).expect("drawable");
        let ts = Typesetter::new(typeface(path).expect("font"));
        let m = Metrics::new(w, h);
        let l = layout(&plot, &series, &ts, &m, w, h, path).expect("a layout");
        assert_eq!(l.legend.place, Place::Below);
        let (_, _, right, bottom) = l.plot;
        assert!(right > 0.9 * f64::from(w), "the chart ends at {right}");
        assert!(l.legend_origin.1 > bottom, "the legend is not under the chart");
        // Short labels stay beside it.
        let l = layout(&fixture(), &prepare(&fixture(), path).expect("drawable"), &ts, &m, w, h, path).expect("layout");
        assert_eq!(l.legend.place, Place::Right);
        assert!(l.legend.box_w <= RIGHT_LEGEND_MAX * f64::from(w));
        render(&plot, w, h);
    }

    #[test]
    fn log_axes_over_few_decades_or_octaves_get_enough_labels_to_read_a_value() {
        // GFLOP/s from 3000 to 55000: 1-2-5 gives four labels; 1-2-3-5 six.
        let spec = log_axis(10.0, 3000f64.log10(), 55_000f64.log10(), 16);
        let labels: Vec<&str> = spec.ticks.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(labels, ["3000", "5000", "10000", "20000", "30000", "50000"]);
        // Speedups from 0.6 to 2.7 on a log2 axis: not only 1 and 2.
        let spec = log_axis(2.0, 0.6f64.log2(), 2.7f64.log2(), 12);
        assert!(spec.ticks.len() >= MIN_LOG_LABELS, "{:?}", spec.ticks);
        assert!(spec.ticks.iter().any(|t| t.1 == "1.5"), "{:?}", spec.ticks);
    }

    /// A legend the plot groups itself counts its own entries (headings included) and the other series'.
    #[test]
    fn a_grouped_legend_lists_its_entries_and_the_references() {
        let style = |i: usize, marker| Style { color: PALETTE[i], marker, hollow: i % 2 == 1 };
        let mut plot = fixture();
        plot.series = (0..30)
            .map(|i| {
                let marker = MARKERS[i % 3];
                Series::points(format!("point {i}"), vec![(f64::from(i as u32 + 1), 10.0 * (i as f64 + 1.0))])
                    .styled(style(i % 5, marker))
            })
            .collect();
        plot.series.push(Series::reference("roof", vec![(1.0, 400.0), (30.0, 400.0)]));
        plot.legend = Some(vec![
            LegendEntry::heading("matmul (squares)"),
            LegendEntry::marker("tiled", style(0, Marker::Square)),
            LegendEntry::marker("double_buffer", style(1, Marker::Square)),
            LegendEntry::heading("fusion (circles)"),
            LegendEntry::marker("fused", style(2, Marker::Circle)),
        ]);
        plot.labels = vec![PointLabel { x: 30.0, y: 300.0, text: "best: point 29".into() }];
        assert_eq!(legend_entries(&plot), 6);
        assert!(legend_is_grouped(&plot));
        let (w, h) = DEFAULT_SIZE;
        let (bytes, _dir) = render(&plot, w, h);
        let (w, h, img) = decode(&bytes);
        let path = Path::new("-");
        let series = prepare(&plot, path).expect("drawable");
        let ts = Typesetter::new(typeface(path).expect("font"));
        let l = layout(&plot, &series, &ts, &Metrics::new(w, h), w, h, path).expect("a layout");
        let b = &l.labels[0];
        // The label's box holds its text (dark ink).
        let dark = (b.y as u32..(b.y + b.h) as u32)
            .flat_map(|y| (b.x as u32..(b.x + b.w) as u32).map(move |x| (x, y)))
            .filter(|&p| colour_at(&img, w, p).iter().all(|&v| v < 90))
            .count();
        assert!(dark > 20, "the label's text is missing");
    }

    /// The realistic matmul ladder: 12 kernels and cuBLAS over N = 256..8192. Set `SUITE_PLOT_EXAMPLE=<file.png>`
    /// to keep the image and look at it.
    #[test]
    fn realistic_ladder_renders() {
        let names = [
            "naive",
            "accumulator",
            "tiled M=4",
            "tiled M=8",
            "tiled M=16",
            "tiled M=32",
            "coalesced",
            "regblock 1D",
            "regblock 2D",
            "vectorized",
            "double-buffered",
            "warptile",
        ];
        let sizes: Vec<f64> = (8..=13).map(|k| f64::from(1u32 << k)).collect();
        let mut series: Vec<Series> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let top = 50.0 * 1.8f64.powi(i as i32);
                let pts = sizes.iter().map(|&n| (n, top * (1.0 - 0.6 / (n / 256.0)))).collect();
                Series::line(*name, pts)
            })
            .collect();
        series.push(Series::reference(
            "cuBLAS",
            sizes.iter().map(|&n| (n, 50_000.0 * (1.0 - 0.5 / (n / 256.0)))).collect(),
        ));
        let plot = LinePlot {
            title: "SGEMM ladder on NVIDIA H100 SXM (sm_90, warp32), run 2024-05-01T12:00Z".to_owned(),
            subtitle: Some("FP32, M = N = K, median of 20 timed runs after 3 warm-ups".to_owned()),
            x_label: "matrix size N (M = N = K)".to_owned(),
            y_label: "GFLOP/s".to_owned(),
            x_axis: Axis::Log2,
            y_axis: Axis::Linear,
            series,
            note: Some(
                "cuBLAS SGEMM is the vendor reference (dashed). FP32 peak of the H100 SXM is 66.9 TFLOP/s without \
                 tensor cores; these kernels use plain FMA."
                    .to_owned(),
            ),
            y_max: None,
            ..LinePlot::default()
        };
        let (w, h) = DEFAULT_SIZE;
        let (bytes, _dir) = render(&plot, w, h);
        let (dw, dh, img) = decode(&bytes);
        assert_eq!((dw, dh), (w, h));
        // Every kernel's point at the largest size sits where the axes put it, in its own colour (the lines end
        // apart there); the reference is black and drawn over them.
        // (The six slowest end within a marker of each other on a 0..50000 axis.)
        for (i, s) in plot.series.iter().enumerate().filter(|(_, s)| s.kind == SeriesKind::Line).skip(6) {
            let at = pixel_of(&plot, w, h, *s.points.last().expect("points"));
            assert_eq!(colour_at(&img, w, at), rgb(PALETTE[i]), "{} at {at:?}", s.label);
        }
        let vendor = plot.series.last().expect("the reference");
        assert_eq!(colour_at(&img, w, pixel_of(&plot, w, h, vendor.points[3])), rgb(REFERENCE_PALETTE[0]));
        if let Some(out) = std::env::var_os("SUITE_PLOT_EXAMPLE") {
            std::fs::write(out, &bytes).expect("the example copy is written");
        }
    }
}
