// The command-line launcher of the CPU emulation (gpu_cpu.h): one launch of one kernel per run, its buffers in
// files, so the Rust tests set up inputs and check results with the suite's own references.
//
// A test program is a kernel source followed by this header and its table of kernels:
//     #include "pt.hip"
//     #include "gpu_cpu_run.h"
//     GPU_CPU_KERNELS(GPU_CPU_ENTRY(pt_produce), GPU_CPU_ENTRY(pt_sync_pt_ci_f4))
// (suite/tests/wave64_cpu.rs writes these programs).
// and runs as
//     program DIR KERNEL GX,GY,GZ BX,BY,BZ DYNAMIC_LDS_BYTES ARG...
// where each ARG is `buf:NAME` (the file DIR/NAME, loaded into a 256-byte aligned buffer before the launch and
// written back after it; the same NAME twice is the same buffer), `null` (a null pointer), or a scalar `u32:V`,
// `i32:V`, `u64:V`, `f32:V`. Arguments are checked against the kernel's parameters (pointer or not, and size).
// Exit status: 0 launched, 2 bad command line or file, 3 the emulation stopped the kernel (see gpu_cpu.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu_cpu {

struct Param {
    bool pointer;
    std::size_t bytes;
};

struct Entry {
    const char* name;
    void (*invoke)(void* const* args);
    std::vector<Param> params;
};

template <auto F, class... P, std::size_t... I>
void call(void* const* args, void (*)(P...), std::index_sequence<I...>) {
    F(*static_cast<std::remove_cv_t<P>*>(args[I])...);
}

template <class... P> constexpr std::size_t arity(void (*)(P...)) { return sizeof...(P); }

// Calls kernel F with its arguments read from args[i] (a pointer to each argument's value, as a driver API launch
// passes them).
template <auto F> void invoke(void* const* args) { call<F>(args, F, std::make_index_sequence<arity(F)>{}); }

template <class... P> std::vector<Param> params_of(void (*)(P...)) {
    return {Param{std::is_pointer_v<P>, sizeof(P)}...};
}

// The table entry of kernel F under `name` (the name a launch asks for).
template <auto F> Entry entry(const char* name) { return Entry{name, &invoke<F>, params_of(F)}; }

[[noreturn]] inline void usage(const std::string& why) {
    std::fprintf(stderr, "gpu_cpu_run: %s\nusage: program DIR KERNEL GX,GY,GZ BX,BY,BZ DYNAMIC_LDS_BYTES ARG...\n",
                 why.c_str());
    std::exit(2);
}

inline dim3 parse_dim(const char* text) {
    dim3 d;
    if (std::sscanf(text, "%u,%u,%u", &d.x, &d.y, &d.z) != 3 || d.x == 0 || d.y == 0 || d.z == 0)
        usage(std::string("bad dimensions `") + text + "`: want X,Y,Z, each at least 1");
    return d;
}

struct Buffer {
    std::string path;
    std::size_t bytes = 0;
    void* data = nullptr;
};

inline int run(const Entry* entries, std::size_t count, int argc, char** argv) {
    if (argc < 6) usage("too few arguments");
    const std::string dir = argv[1], kernel = argv[2];
    const Entry* entry = nullptr;
    for (std::size_t i = 0; i < count; ++i)
        if (kernel == entries[i].name) entry = &entries[i];
    if (entry == nullptr) usage("kernel `" + kernel + "` is not in this program's table");
    const dim3 grid = parse_dim(argv[3]), block = parse_dim(argv[4]);
    const std::size_t lds = std::strtoull(argv[5], nullptr, 10);
    const int given = argc - 6;
    if ((std::size_t)given != entry->params.size())
        usage(kernel + " takes " + std::to_string(entry->params.size()) + " arguments, " + std::to_string(given) +
              " given");

    std::map<std::string, Buffer> buffers;
    std::vector<std::uint64_t> values(given);
    std::vector<void*> args(given);
    for (int i = 0; i < given; ++i) {
        const std::string arg = argv[6 + i];
        const Param& p = entry->params[i];
        const std::string where = kernel + " argument " + std::to_string(i) + " `" + arg + "`";
        void* value = &values[i];
        if (arg.rfind("buf:", 0) == 0 || arg == "null") {
            if (!p.pointer) usage(where + ": the parameter is not a pointer");
            void* ptr = nullptr;
            if (arg != "null") {
                Buffer& b = buffers[arg.substr(4)];
                if (b.data == nullptr) {
                    b.path = dir + "/" + arg.substr(4);
                    std::FILE* f = std::fopen(b.path.c_str(), "rb");
                    if (f == nullptr) usage(where + ": cannot open " + b.path);
                    std::fseek(f, 0, SEEK_END);
                    b.bytes = (std::size_t)std::ftell(f);
                    std::fseek(f, 0, SEEK_SET);
                    b.data = std::aligned_alloc(256, (b.bytes + 256) / 256 * 256);
                    if (b.bytes != 0 && std::fread(b.data, 1, b.bytes, f) != b.bytes) usage(where + ": short read");
                    std::fclose(f);
                }
                ptr = b.data;
            }
            std::memcpy(value, &ptr, sizeof ptr);
        } else {
            if (p.pointer) usage(where + ": the parameter is a pointer (use buf:NAME or null)");
            const std::size_t colon = arg.find(':');
            const std::string kind = arg.substr(0, colon), text = colon == std::string::npos ? "" : arg.substr(colon + 1);
            const std::size_t bytes = kind == "u64" ? 8 : 4;
            if (kind != "u32" && kind != "i32" && kind != "u64" && kind != "f32") usage(where + ": unknown kind");
            if (bytes != p.bytes) usage(where + ": the parameter has " + std::to_string(p.bytes) + " bytes");
            if (kind == "u32") {
                const unsigned v = (unsigned)std::stoul(text);
                std::memcpy(value, &v, 4);
            } else if (kind == "i32") {
                const int v = std::stoi(text);
                std::memcpy(value, &v, 4);
            } else if (kind == "u64") {
                const unsigned long long v = std::stoull(text);
                std::memcpy(value, &v, 8);
            } else {
                const float v = std::stof(text);
                std::memcpy(value, &v, 4);
            }
        }
        args[i] = value;
    }

    launch(grid, block, lds, [&] { entry->invoke(args.data()); });

    for (auto& [name, b] : buffers) {
        std::FILE* f = std::fopen(b.path.c_str(), "wb");
        if (f == nullptr || (b.bytes != 0 && std::fwrite(b.data, 1, b.bytes, f) != b.bytes) || std::fclose(f) != 0)
            usage("cannot write back " + b.path);
        std::free(b.data);
    }
    return 0;
}

}  // namespace gpu_cpu

// The entry of a kernel under its own name. (A kernel declared in a namespace takes gpu_cpu::entry<&ns::k>("k").)
#define GPU_CPU_ENTRY(kernel) gpu_cpu::entry<&kernel>(#kernel)

#define GPU_CPU_KERNELS(...)                                                                                        \
    int main(int argc, char** argv) {                                                                               \
        static const gpu_cpu::Entry entries[] = {__VA_ARGS__};                                                      \
        return gpu_cpu::run(entries, sizeof entries / sizeof entries[0], argc, argv);                               \
    }
