// Host glue over Metal for kernels/metal (macOS only; never built on the
// Linux machines this project is developed and tested on, where
// checkobjc.sh type-checks it). Not thread-safe:
// kernels/gpu serialises every call.
#ifndef DF_METAL_H
#define DF_METAL_H

#include <stddef.h>
#include <stdint.h>

#define DFM_SLOTS 16
#define DFM_MAX_SHADERS 16
#define DFM_MAX_BINDINGS 8
#define DFM_LOCAL_SIZE 64

typedef struct dfmtl dfmtl;

typedef struct {
	char name[256];
	int unified;        // hasUnifiedMemory
	uint64_t maxBuffer; // maxBufferLength
	uint64_t workingSet; // recommendedMaxWorkingSetSize
} dfmtl_info;

// dfmtl_open takes the system default device if it has the capabilities the
// shaders need and compiles each MSL source (entry point main0) into a
// compute pipeline state. Returns 0, or -1 with err set.
int dfmtl_open(dfmtl **out, const char *const *src, int nshaders, dfmtl_info *info, char *err, int errlen);
void dfmtl_close(dfmtl *c);
// dfmtl_slot makes slot i a shared-storage buffer of at least bytes and
// returns its contents, or NULL.
void *dfmtl_slot(dfmtl *c, int i, uint64_t bytes);
int dfmtl_begin(dfmtl *c);
int dfmtl_dispatch(dfmtl *c, int shader, const int *slots, int nslots, const void *push, int pushBytes, uint32_t gx,
                   uint32_t gy, uint32_t local);
int dfmtl_submit(dfmtl *c);
// dfmtl_upload copies bytes of data into a new shared-storage buffer (on
// unified memory the GPU reads it in place) and sets *buf, which
// dfmtl_dispatch takes like a slot (>= DFM_SLOTS). Returns 0 or -1.
int dfmtl_upload(dfmtl *c, const void *data, uint64_t bytes, int *buf);
// dfmtl_free releases a buffer from dfmtl_upload.
void dfmtl_free(dfmtl *c, int buf);

#endif
