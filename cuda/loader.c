//go:build linux && cgo

#define _GNU_SOURCE // dlinfo
#include "loader.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>

frog_api frog;

void *frog_dlopen(const char *name, const char **err) {
	dlerror();
	void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		*err = dlerror();
	}
	return lib;
}

int frog_dlsym(void *lib, const char *name, void **slot, const char **err) {
	dlerror();
	void *p = dlsym(lib, name);
	const char *e = dlerror();
	if (e != NULL || p == NULL) {
		*err = e != NULL ? e : "symbol is NULL";
		return -1;
	}
	*slot = p;
	return 0;
}

const char *frog_dlpath(void *lib) {
	struct link_map *map = NULL;
	if (dlinfo(lib, RTLD_DI_LINKMAP, &map) != 0 || map == NULL) {
		return NULL;
	}
	return map->l_name;
}

frog_result frog_cuInit(void) { return frog.cuInit(0); }
frog_result frog_cuDriverGetVersion(int *v) { return frog.cuDriverGetVersion(v); }
frog_result frog_cuDeviceGetCount(int *n) { return frog.cuDeviceGetCount(n); }
frog_result frog_cuDeviceGet(frog_device *d, int ordinal) { return frog.cuDeviceGet(d, ordinal); }
frog_result frog_cuDeviceGetName(char *name, int len, frog_device d) { return frog.cuDeviceGetName(name, len, d); }
frog_result frog_cuDeviceGetAttribute(int *v, int attrib, frog_device d) {
	return frog.cuDeviceGetAttribute(v, attrib, d);
}
frog_result frog_cuDevicePrimaryCtxRetain(frog_handle *ctx, frog_device d) {
	return frog.cuDevicePrimaryCtxRetain(ctx, d);
}
frog_result frog_cuDevicePrimaryCtxRelease(frog_device d) { return frog.cuDevicePrimaryCtxRelease_v2(d); }
frog_result frog_cuCtxSetCurrent(frog_handle ctx) { return frog.cuCtxSetCurrent(ctx); }
frog_result frog_cuCtxSynchronize(void) { return frog.cuCtxSynchronize(); }
frog_result frog_cuMemAlloc(frog_deviceptr *p, size_t bytes) { return frog.cuMemAlloc_v2(p, bytes); }
frog_result frog_cuMemFree(frog_deviceptr p) { return frog.cuMemFree_v2(p); }
frog_result frog_cuMemcpyHtoD(frog_deviceptr dst, const void *src, size_t bytes) {
	return frog.cuMemcpyHtoD_v2(dst, src, bytes);
}
frog_result frog_cuMemcpyDtoH(void *dst, frog_deviceptr src, size_t bytes) {
	return frog.cuMemcpyDtoH_v2(dst, src, bytes);
}
frog_result frog_cuMemcpyDtoD(frog_deviceptr dst, frog_deviceptr src, size_t bytes) {
	return frog.cuMemcpyDtoD_v2(dst, src, bytes);
}
frog_result frog_cuModuleLoadData(frog_handle *mod, const void *image) { return frog.cuModuleLoadData(mod, image); }
frog_result frog_cuModuleUnload(frog_handle mod) { return frog.cuModuleUnload(mod); }
frog_result frog_cuModuleGetFunction(frog_handle *fn, frog_handle mod, const char *name) {
	return frog.cuModuleGetFunction(fn, mod, name);
}

frog_result frog_launch(frog_handle fn, unsigned int gx, unsigned int gy, unsigned int bx, unsigned int by,
                        unsigned int shared, unsigned long long *slots, int nargs) {
	void *params[16];
	if (nargs < 0 || nargs > 16) {
		return 1; // CUDA_ERROR_INVALID_VALUE
	}
	for (int i = 0; i < nargs; i++) {
		params[i] = &slots[i];
	}
	return frog.cuLaunchKernel(fn, gx, gy, 1, bx, by, 1, shared, NULL, params, NULL);
}

const char *frog_cuGetErrorName(frog_result err) {
	const char *name = NULL;
	if (frog.cuGetErrorName == NULL || frog.cuGetErrorName(err, &name) != 0) {
		return NULL;
	}
	return name;
}

frog_result frog_nvrtcVersion(int *major, int *minor) { return frog.nvrtcVersion(major, minor); }

int frog_nvrtcSupportedArchs(int *archs, int max) {
	int n = 0;
	if (frog.nvrtcGetNumSupportedArchs == NULL || frog.nvrtcGetSupportedArchs == NULL ||
	    frog.nvrtcGetNumSupportedArchs(&n) != 0 || n <= 0 || n > max) {
		return -1;
	}
	if (frog.nvrtcGetSupportedArchs(archs) != 0) {
		return -1;
	}
	return n;
}

frog_result frog_nvrtc_compile(const char *src, const char *name, const char *const *opts, int nopts,
                               char **cubin, size_t *size, char **log, const char **failed) {
	frog_handle prog = NULL;
	*cubin = NULL;
	*size = 0;
	*log = NULL;
	frog_result r = frog.nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL);
	if (r != 0) {
		*failed = "nvrtcCreateProgram";
		return r;
	}
	frog_result cr = frog.nvrtcCompileProgram(prog, nopts, opts);
	size_t logSize = 0;
	if (frog.nvrtcGetProgramLogSize(prog, &logSize) == 0 && logSize > 1) {
		*log = malloc(logSize);
		if (*log != NULL && frog.nvrtcGetProgramLog(prog, *log) != 0) {
			free(*log);
			*log = NULL;
		}
	}
	if (cr != 0) {
		*failed = "nvrtcCompileProgram";
		frog.nvrtcDestroyProgram(&prog);
		return cr;
	}
	r = frog.nvrtcGetCUBINSize(prog, size);
	if (r != 0) {
		*failed = "nvrtcGetCUBINSize";
		frog.nvrtcDestroyProgram(&prog);
		return r;
	}
	*cubin = malloc(*size > 0 ? *size : 1);
	if (*cubin == NULL) {
		*failed = "malloc";
		frog.nvrtcDestroyProgram(&prog);
		return 1; // NVRTC_ERROR_OUT_OF_MEMORY
	}
	r = frog.nvrtcGetCUBIN(prog, *cubin);
	if (r != 0) {
		*failed = "nvrtcGetCUBIN";
		free(*cubin);
		*cubin = NULL;
	}
	frog.nvrtcDestroyProgram(&prog);
	return r;
}

const char *frog_nvrtcGetErrorString(frog_result err) {
	return frog.nvrtcGetErrorString != NULL ? frog.nvrtcGetErrorString(err) : NULL;
}

frog_result frog_cublasCreate(frog_handle *h) { return frog.cublasCreate_v2(h); }
frog_result frog_cublasDestroy(frog_handle h) { return frog.cublasDestroy_v2(h); }
frog_result frog_cublasGetVersion(frog_handle h, int *v) { return frog.cublasGetVersion_v2(h, v); }
frog_result frog_cublasGetProperty(int type, int *v) {
	return frog.cublasGetProperty != NULL ? frog.cublasGetProperty(type, v) : -1;
}

#define FROG_DPTR(p) ((float *)(uintptr_t)(p))

frog_result frog_sgemm(frog_handle h, int ta, int tb, int m, int n, int k, float alpha,
                       frog_deviceptr a, int lda, frog_deviceptr b, int ldb, float beta,
                       frog_deviceptr c, int ldc) {
	return frog.cublasSgemm_v2(h, ta, tb, m, n, k, &alpha, FROG_DPTR(a), lda, FROG_DPTR(b), ldb, &beta,
	                           FROG_DPTR(c), ldc);
}

frog_result frog_sgemm_strided(frog_handle h, int ta, int tb, int m, int n, int k, float alpha,
                               frog_deviceptr a, int lda, long long sa, frog_deviceptr b, int ldb,
                               long long sb, float beta, frog_deviceptr c, int ldc, long long sc,
                               int batch) {
	if (frog.cublasSgemmStridedBatched == NULL) {
		return -1;
	}
	return frog.cublasSgemmStridedBatched(h, ta, tb, m, n, k, &alpha, FROG_DPTR(a), lda, sa, FROG_DPTR(b),
	                                      ldb, sb, &beta, FROG_DPTR(c), ldc, sc, batch);
}

const char *frog_cublasGetStatusName(frog_result status) {
	return frog.cublasGetStatusName != NULL ? frog.cublasGetStatusName(status) : NULL;
}
