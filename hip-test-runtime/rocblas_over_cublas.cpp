// rocBLAS over cuBLAS, the BLAS half of the HIP-over-CUDA test runtime: the rocBLAS functions hip-sys loads
// (handle, stream, pointer mode, sgemm, dgemm, sdot, sasum, ddot, dasum), with rocBLAS's C types, enum values and statuses
// (ROCm/rocBLAS library/include/internal/rocblas-types.h, release/rocm-rel-6.3; the same as hip-sys/src/rocblas.rs),
// each forwarded to the cuBLAS function of the same meaning. A rocblas_handle is a cublasHandle_t and a hipStream_t a
// CUstream (see hip_over_cuda.cpp), so the handle is bound to the stream the suite's AMD module created.
//
// cuBLAS's math mode is pinned to CUBLAS_DEFAULT_MATH, as the suite's NVIDIA module pins it: plain FP32, no TF32,
// so the SGEMM reference is the same on both paths. Like the HIP half it is a test double, marked by
// rocblas_over_cublas_test_runtime_describe(), which rocBLAS does not have. rocBLAS exports its C API without
// symbol versions, so this library has none either.
//
// No cuBLAS header is needed (the few declarations are below, from cuBLAS's documented C API); libcublas is opened
// with dlopen on first use, so the library builds anywhere and a missing cuBLAS is an error status, not a crash.

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#define ROCBLAS_EXPORT extern "C" __attribute__((visibility("default")))

extern "C" {
// rocBLAS's C types (LP64 interface: rocblas_int is int32_t).
typedef int32_t rocblas_int;
typedef struct _rocblas_handle* rocblas_handle;
typedef struct ihipStream_t* hipStream_t;
typedef enum rocblas_status_ {
    rocblas_status_success = 0,
    rocblas_status_invalid_handle = 1,
    rocblas_status_not_implemented = 2,
    rocblas_status_invalid_pointer = 3,
    rocblas_status_invalid_size = 4,
    rocblas_status_memory_error = 5,
    rocblas_status_internal_error = 6,
    rocblas_status_invalid_value = 11,
    rocblas_status_arch_mismatch = 15,
} rocblas_status;
typedef enum rocblas_operation_ {
    rocblas_operation_none = 111,
    rocblas_operation_transpose = 112,
    rocblas_operation_conjugate_transpose = 113,
} rocblas_operation;
typedef enum rocblas_pointer_mode_ {
    rocblas_pointer_mode_host = 0,
    rocblas_pointer_mode_device = 1,
} rocblas_pointer_mode;
}

namespace {

// cuBLAS's C types and values (cublas_api.h, CUDA 12 and 13).
typedef struct cublasContext* cublasHandle_t;
typedef struct CUstream_st* cudaStream_t;
typedef int cublasStatus_t;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
                         CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8,
                         CUBLAS_STATUS_MAPPING_ERROR = 11, CUBLAS_STATUS_NOT_SUPPORTED = 15;
constexpr int CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2;
constexpr int CUBLAS_DEFAULT_MATH = 0;
constexpr int MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2;

// Each function's type, then the table of exported names and types.
using Create = cublasStatus_t (*)(cublasHandle_t*);
using Destroy = cublasStatus_t (*)(cublasHandle_t);
using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using SetMode = cublasStatus_t (*)(cublasHandle_t, int);
using GetProperty = cublasStatus_t (*)(int, int*);
using Sgemm = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const float*, const float*, int,
                                 const float*, int, const float*, float*, int);
using Dgemm = cublasStatus_t (*)(cublasHandle_t, int, int, int, int, int, const double*, const double*, int,
                                 const double*, int, const double*, double*, int);
using Sdot = cublasStatus_t (*)(cublasHandle_t, int, const float*, int, const float*, int, float*);
using Sasum = cublasStatus_t (*)(cublasHandle_t, int, const float*, int, float*);
using Ddot = cublasStatus_t (*)(cublasHandle_t, int, const double*, int, const double*, int, double*);
using Dasum = cublasStatus_t (*)(cublasHandle_t, int, const double*, int, double*);

#define CUBLAS_FUNCTIONS(X)                                                                                            \
    X(cublasCreate_v2, Create) X(cublasDestroy_v2, Destroy) X(cublasSetStream_v2, SetStream)                           \
    X(cublasSetPointerMode_v2, SetMode) X(cublasSetMathMode, SetMode) X(cublasGetProperty, GetProperty)               \
    X(cublasSgemm_v2, Sgemm) X(cublasDgemm_v2, Dgemm) X(cublasSdot_v2, Sdot) X(cublasSasum_v2, Sasum)               \
    X(cublasDdot_v2, Ddot) X(cublasDasum_v2, Dasum)

struct Cublas {
#define DECLARE(name, type) type name = nullptr;
    CUBLAS_FUNCTIONS(DECLARE)
#undef DECLARE
    std::string path;     // where libcublas was found (resolved)
    std::string failure;  // why it cannot be used; empty when it can
};

std::string resolved(const char* path) {
    char buffer[PATH_MAX];
    return realpath(path, buffer) ? std::string(buffer) : std::string(path);
}

// cuBLAS, searched as the suite's NVIDIA module searches it: $CUDA_PATH/lib64, /usr/local/cuda/lib64, then the
// system loader's path; CUDA 13's soname first, then CUDA 12's.
Cublas& cublas() {
    static Cublas c;
    static std::once_flag once;
    std::call_once(once, [] {
        std::vector<std::string> candidates;
        const char* root = getenv("CUDA_PATH");
        for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
            if (root && *root) candidates.push_back(std::string(root) + "/lib64/" + name);
            candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
            candidates.push_back(name);  // the system loader's own search
        }
        void* handle = nullptr;
        std::string tried;
        for (const std::string& path : candidates) {
            handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (handle) break;
            const char* why = dlerror();
            tried += "\n  tried " + path + ": " + (why ? why : "?");
        }
        if (!handle) {
            c.failure = "cuBLAS could not be loaded (set CUDA_PATH or LD_LIBRARY_PATH):" + tried;
            return;
        }
#define LOAD(name, type)                                                                                               \
    c.name = reinterpret_cast<type>(dlsym(handle, #name));                                                             \
    if (!c.name && c.failure.empty()) c.failure = "libcublas does not export " #name;
        CUBLAS_FUNCTIONS(LOAD)
#undef LOAD
        Dl_info info;
        if (c.cublasCreate_v2 && dladdr(reinterpret_cast<void*>(c.cublasCreate_v2), &info) && info.dli_fname) {
            c.path = resolved(info.dli_fname);
        }
    });
    return c;
}

rocblas_status to_rocblas(cublasStatus_t s) {
    switch (s) {
        case CUBLAS_STATUS_SUCCESS: return rocblas_status_success;
        case CUBLAS_STATUS_NOT_INITIALIZED: return rocblas_status_invalid_handle;
        case CUBLAS_STATUS_ALLOC_FAILED:
        case CUBLAS_STATUS_MAPPING_ERROR: return rocblas_status_memory_error;
        case CUBLAS_STATUS_INVALID_VALUE: return rocblas_status_invalid_value;
        case CUBLAS_STATUS_ARCH_MISMATCH: return rocblas_status_arch_mismatch;
        case CUBLAS_STATUS_NOT_SUPPORTED: return rocblas_status_not_implemented;
        default: return rocblas_status_internal_error;  // execution failed, internal or licence errors
    }
}

// The cuBLAS operation for a rocBLAS one, or -1.
int to_cublas(rocblas_operation op) {
    switch (op) {
        case rocblas_operation_none: return CUBLAS_OP_N;
        case rocblas_operation_transpose: return CUBLAS_OP_T;
        case rocblas_operation_conjugate_transpose: return CUBLAS_OP_C;
    }
    return -1;
}

cublasHandle_t handle_of(rocblas_handle h) { return reinterpret_cast<cublasHandle_t>(h); }

std::string describe() {
    std::string self = "?";
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(&describe), &info) && info.dli_fname) self = resolved(info.dli_fname);
    std::string text = "rocBLAS over cuBLAS, HIP over CUDA test runtime " + self + " (NVIDIA hardware, not rocBLAS " +
                       "on an AMD GPU); ";
    Cublas& c = cublas();
    if (!c.failure.empty()) return text + c.failure;
    int major = 0, minor = 0, patch = 0;
    c.cublasGetProperty(MAJOR_VERSION, &major);
    c.cublasGetProperty(MINOR_VERSION, &minor);
    c.cublasGetProperty(PATCH_LEVEL, &patch);
    return text + "cuBLAS " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) +
           " from " + c.path + ", CUBLAS_DEFAULT_MATH (FP32, no TF32)";
}

}  // namespace

ROCBLAS_EXPORT const char* rocblas_over_cublas_test_runtime_describe() {
    static const std::string text = describe();
    return text.c_str();
}

ROCBLAS_EXPORT rocblas_status rocblas_create_handle(rocblas_handle* handle) {
    if (!handle) return rocblas_status_invalid_pointer;
    Cublas& c = cublas();
    if (!c.failure.empty()) return rocblas_status_internal_error;
    cublasHandle_t h = nullptr;
    if (cublasStatus_t s = c.cublasCreate_v2(&h); s != CUBLAS_STATUS_SUCCESS) return to_rocblas(s);
    if (cublasStatus_t s = c.cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); s != CUBLAS_STATUS_SUCCESS) {
        c.cublasDestroy_v2(h);
        return to_rocblas(s);
    }
    *handle = reinterpret_cast<rocblas_handle>(h);
    return rocblas_status_success;
}

ROCBLAS_EXPORT rocblas_status rocblas_destroy_handle(rocblas_handle handle) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasDestroy_v2(handle_of(handle)));
}

ROCBLAS_EXPORT rocblas_status rocblas_set_stream(rocblas_handle handle, hipStream_t stream) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasSetStream_v2(handle_of(handle), reinterpret_cast<cudaStream_t>(stream)));
}

// rocBLAS's and cuBLAS's pointer modes have the same values (host 0, device 1).
ROCBLAS_EXPORT rocblas_status rocblas_set_pointer_mode(rocblas_handle handle, rocblas_pointer_mode mode) {
    if (!handle) return rocblas_status_invalid_handle;
    if (mode != rocblas_pointer_mode_host && mode != rocblas_pointer_mode_device) return rocblas_status_invalid_value;
    return to_rocblas(cublas().cublasSetPointerMode_v2(handle_of(handle), static_cast<int>(mode)));
}

// Both libraries are column-major with the same argument order.
ROCBLAS_EXPORT rocblas_status rocblas_sgemm(rocblas_handle handle, rocblas_operation trans_a,
                                            rocblas_operation trans_b, rocblas_int m, rocblas_int n, rocblas_int k,
                                            const float* alpha, const float* a, rocblas_int lda, const float* b,
                                            rocblas_int ldb, const float* beta, float* c, rocblas_int ldc) {
    if (!handle) return rocblas_status_invalid_handle;
    int op_a = to_cublas(trans_a), op_b = to_cublas(trans_b);
    if (op_a < 0 || op_b < 0) return rocblas_status_invalid_value;
    return to_rocblas(
        cublas().cublasSgemm_v2(handle_of(handle), op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

ROCBLAS_EXPORT rocblas_status rocblas_dgemm(rocblas_handle handle, rocblas_operation trans_a,
                                            rocblas_operation trans_b, rocblas_int m, rocblas_int n, rocblas_int k,
                                            const double* alpha, const double* a, rocblas_int lda, const double* b,
                                            rocblas_int ldb, const double* beta, double* c, rocblas_int ldc) {
    if (!handle) return rocblas_status_invalid_handle;
    int op_a = to_cublas(trans_a), op_b = to_cublas(trans_b);
    if (op_a < 0 || op_b < 0) return rocblas_status_invalid_value;
    return to_rocblas(
        cublas().cublasDgemm_v2(handle_of(handle), op_a, op_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

ROCBLAS_EXPORT rocblas_status rocblas_sdot(rocblas_handle handle, rocblas_int n, const float* x, rocblas_int incx,
                                           const float* y, rocblas_int incy, float* result) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasSdot_v2(handle_of(handle), n, x, incx, y, incy, result));
}

ROCBLAS_EXPORT rocblas_status rocblas_sasum(rocblas_handle handle, rocblas_int n, const float* x, rocblas_int incx,
                                            float* result) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasSasum_v2(handle_of(handle), n, x, incx, result));
}

ROCBLAS_EXPORT rocblas_status rocblas_ddot(rocblas_handle handle, rocblas_int n, const double* x, rocblas_int incx,
                                           const double* y, rocblas_int incy, double* result) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasDdot_v2(handle_of(handle), n, x, incx, y, incy, result));
}

ROCBLAS_EXPORT rocblas_status rocblas_dasum(rocblas_handle handle, rocblas_int n, const double* x, rocblas_int incx,
                                            double* result) {
    if (!handle) return rocblas_status_invalid_handle;
    return to_rocblas(cublas().cublasDasum_v2(handle_of(handle), n, x, incx, result));
}
