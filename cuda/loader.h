// The CUDA driver, NVRTC and cuBLAS as frog calls them: a table of function
// pointers filled by dlsym at run time, and C wrappers that call through it
// (cgo cannot call a function pointer). Nothing here comes from the CUDA
// toolkit: the few types are declared as the ABI has them.
#ifndef FROG_LOADER_H
#define FROG_LOADER_H

#include <stddef.h>

typedef int frog_result;                    // CUresult, nvrtcResult, cublasStatus_t
typedef int frog_device;                    // CUdevice
typedef unsigned long long frog_deviceptr;  // CUdeviceptr of the _v2 ABI: 64-bit
typedef void *frog_handle;                  // CUcontext, CUmodule, CUfunction, nvrtcProgram, cublasHandle_t

typedef struct {
	// libcuda.so.1
	frog_result (*cuInit)(unsigned int flags);
	frog_result (*cuDriverGetVersion)(int *version);
	frog_result (*cuDeviceGetCount)(int *count);
	frog_result (*cuDeviceGet)(frog_device *dev, int ordinal);
	frog_result (*cuDeviceGetName)(char *name, int len, frog_device dev);
	frog_result (*cuDeviceGetAttribute)(int *value, int attrib, frog_device dev);
	frog_result (*cuDevicePrimaryCtxRetain)(frog_handle *ctx, frog_device dev);
	frog_result (*cuDevicePrimaryCtxRelease_v2)(frog_device dev);
	frog_result (*cuCtxSetCurrent)(frog_handle ctx);
	frog_result (*cuCtxSynchronize)(void);
	frog_result (*cuMemAlloc_v2)(frog_deviceptr *dptr, size_t bytes);
	frog_result (*cuMemFree_v2)(frog_deviceptr dptr);
	frog_result (*cuMemcpyHtoD_v2)(frog_deviceptr dst, const void *src, size_t bytes);
	frog_result (*cuMemcpyDtoH_v2)(void *dst, frog_deviceptr src, size_t bytes);
	frog_result (*cuMemcpyDtoD_v2)(frog_deviceptr dst, frog_deviceptr src, size_t bytes);
	frog_result (*cuModuleLoadData)(frog_handle *mod, const void *image);
	frog_result (*cuModuleUnload)(frog_handle mod);
	frog_result (*cuModuleGetFunction)(frog_handle *fn, frog_handle mod, const char *name);
	frog_result (*cuLaunchKernel)(frog_handle fn, unsigned int gx, unsigned int gy, unsigned int gz,
	                              unsigned int bx, unsigned int by, unsigned int bz,
	                              unsigned int shared, frog_handle stream, void **params, void **extra);
	frog_result (*cuGetErrorName)(frog_result err, const char **name);

	// libnvrtc.so.13 or .12
	frog_result (*nvrtcVersion)(int *major, int *minor);
	frog_result (*nvrtcGetNumSupportedArchs)(int *n); // optional
	frog_result (*nvrtcGetSupportedArchs)(int *archs); // optional
	frog_result (*nvrtcCreateProgram)(frog_handle *prog, const char *src, const char *name, int nheaders,
	                                  const char *const *headers, const char *const *includes);
	frog_result (*nvrtcCompileProgram)(frog_handle prog, int nopts, const char *const *opts);
	frog_result (*nvrtcGetProgramLogSize)(frog_handle prog, size_t *size);
	frog_result (*nvrtcGetProgramLog)(frog_handle prog, char *log);
	frog_result (*nvrtcGetCUBINSize)(frog_handle prog, size_t *size);
	frog_result (*nvrtcGetCUBIN)(frog_handle prog, char *cubin);
	frog_result (*nvrtcDestroyProgram)(frog_handle *prog);
	const char *(*nvrtcGetErrorString)(frog_result err);

	// libcublas.so.13 or .12
	frog_result (*cublasCreate_v2)(frog_handle *h);
	frog_result (*cublasDestroy_v2)(frog_handle h);
	frog_result (*cublasGetVersion_v2)(frog_handle h, int *version);
	frog_result (*cublasSgemm_v2)(frog_handle h, int ta, int tb, int m, int n, int k,
	                              const float *alpha, const float *a, int lda, const float *b, int ldb,
	                              const float *beta, float *c, int ldc);
	frog_result (*cublasSgemmStridedBatched)(frog_handle h, int ta, int tb, int m, int n, int k,
	                                         const float *alpha, const float *a, int lda, long long sa,
	                                         const float *b, int ldb, long long sb, const float *beta,
	                                         float *c, int ldc, long long sc, int batch); // optional
	const char *(*cublasGetStatusName)(frog_result status); // optional
	frog_result (*cublasGetProperty)(int type, int *value); // optional; type 0, 1, 2: major, minor, patch
} frog_api;

extern frog_api frog;

// frog_dlopen opens a library with RTLD_NOW | RTLD_LOCAL; on failure it
// returns NULL and *err is dlerror's message.
void *frog_dlopen(const char *name, const char **err);
// frog_dlpath returns the path the loader opened lib from (its link map's
// l_name), or NULL.
const char *frog_dlpath(void *lib);
// frog_dlsym stores the address of name in *slot; on failure it returns -1
// and *err is dlerror's message.
int frog_dlsym(void *lib, const char *name, void **slot, const char **err);

frog_result frog_cuInit(void);
frog_result frog_cuDriverGetVersion(int *v);
frog_result frog_cuDeviceGetCount(int *n);
frog_result frog_cuDeviceGet(frog_device *d, int ordinal);
frog_result frog_cuDeviceGetName(char *name, int len, frog_device d);
frog_result frog_cuDeviceGetAttribute(int *v, int attrib, frog_device d);
frog_result frog_cuDevicePrimaryCtxRetain(frog_handle *ctx, frog_device d);
frog_result frog_cuDevicePrimaryCtxRelease(frog_device d);
frog_result frog_cuCtxSetCurrent(frog_handle ctx);
frog_result frog_cuCtxSynchronize(void);
frog_result frog_cuMemAlloc(frog_deviceptr *p, size_t bytes);
frog_result frog_cuMemFree(frog_deviceptr p);
frog_result frog_cuMemcpyHtoD(frog_deviceptr dst, const void *src, size_t bytes);
frog_result frog_cuMemcpyDtoH(void *dst, frog_deviceptr src, size_t bytes);
frog_result frog_cuMemcpyDtoD(frog_deviceptr dst, frog_deviceptr src, size_t bytes);
frog_result frog_cuModuleLoadData(frog_handle *mod, const void *image);
frog_result frog_cuModuleUnload(frog_handle mod);
frog_result frog_cuModuleGetFunction(frog_handle *fn, frog_handle mod, const char *name);
// frog_launch launches fn with nargs arguments, each in an 8-byte slot
// holding its value in the low bytes (little-endian), on the legacy default
// stream.
frog_result frog_launch(frog_handle fn, unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by,
                        unsigned int shared, unsigned long long *slots, int nargs);
const char *frog_cuGetErrorName(frog_result err);

frog_result frog_nvrtcVersion(int *major, int *minor);
// frog_nvrtcSupportedArchs writes up to max architectures into archs and
// returns how many, or -1 when this NVRTC cannot say.
int frog_nvrtcSupportedArchs(int *archs, int max);
// frog_nvrtc_compile compiles src to a CUBIN, which it returns in *cubin
// (malloc'd, *size bytes; the caller frees it); *log gets NVRTC's log
// (malloc'd or NULL) and *failed the name of the call that failed.
frog_result frog_nvrtc_compile(const char *src, const char *name, const char *const *opts, int nopts,
                               char **cubin, size_t *size, char **log, const char **failed);
const char *frog_nvrtcGetErrorString(frog_result err);

frog_result frog_cublasCreate(frog_handle *h);
frog_result frog_cublasDestroy(frog_handle h);
frog_result frog_cublasGetVersion(frog_handle h, int *v);
// frog_cublasGetProperty returns -1 when cublasGetProperty is missing.
frog_result frog_cublasGetProperty(int type, int *v);
frog_result frog_sgemm(frog_handle h, int ta, int tb, int m, int n, int k, float alpha,
                       frog_deviceptr a, int lda, frog_deviceptr b, int ldb, float beta,
                       frog_deviceptr c, int ldc);
// frog_sgemm_strided returns -1 when cublasSgemmStridedBatched is missing.
frog_result frog_sgemm_strided(frog_handle h, int ta, int tb, int m, int n, int k, float alpha,
                               frog_deviceptr a, int lda, long long sa, frog_deviceptr b, int ldb,
                               long long sb, float beta, frog_deviceptr c, int ldc, long long sc,
                               int batch);
// frog_cublasGetStatusName returns NULL when cuBLAS cannot name status.
const char *frog_cublasGetStatusName(frog_result status);

#endif
