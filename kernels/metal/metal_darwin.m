// Metal host glue: device, buffers, pipeline states, command buffers.
// macOS only, manual reference counting (no -fobjc-arc). Never built or run
// on the Linux development machines; type-checked there by checkobjc.sh
// against the declarations of the Apple APIs it uses (macshim/).
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>

#include "metal_darwin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dfmtl {
	id<MTLDevice> dev;
	id<MTLCommandQueue> queue;
	id<MTLComputePipelineState> pipes[DFM_MAX_SHADERS];
	int npipes;
	id<MTLBuffer> bufs[DFM_SLOTS];
	id<MTLBuffer> *res; // resident weights, ids DFM_SLOTS + i
	int nres;
	id<MTLCommandBuffer> cmd;
	id<MTLComputeCommandEncoder> enc;
};

void dfmtl_close(dfmtl *c) {
	if (!c) return;
	for (int i = 0; i < DFM_SLOTS; i++) [c->bufs[i] release];
	for (int i = 0; i < c->nres; i++) [c->res[i] release];
	free(c->res);
	for (int i = 0; i < c->npipes; i++) [c->pipes[i] release];
	[c->enc release];
	[c->cmd release];
	[c->queue release];
	[c->dev release];
	free(c);
}

// capable checks features, never the chip's name: a GPU family with the
// compute features the shaders use, 64-thread threadgroups, the 32 KiB of
// threadgroup memory attn.comp takes (the most of any shader; mmtile.comp
// 13 KiB; kernels/shaders/mslcheck.sh holds every shader to 32 KiB), and
// large buffers.
static const char *capable(id<MTLDevice> dev) {
	BOOL family = NO;
	if (@available(macOS 13.0, *)) family = [dev supportsFamily:MTLGPUFamilyMetal3];
	if (!family) family = [dev supportsFamily:MTLGPUFamilyApple7] || [dev supportsFamily:MTLGPUFamilyMac2];
	if (!family) return "the GPU supports neither the Metal 3, Apple7 nor Mac2 family";
	if (dev.maxThreadsPerThreadgroup.width < DFM_LOCAL_SIZE) return "the GPU's threadgroups are narrower than 64 threads";
	if (dev.maxThreadgroupMemoryLength < 32 * 1024) return "the GPU has less than 32 KiB of threadgroup memory";
	if (dev.maxBufferLength < ((uint64_t)256 << 20)) return "the GPU's buffers are smaller than 256 MiB";
	return NULL;
}

int dfmtl_open(dfmtl **out, const char *const *src, int nshaders, dfmtl_info *info, char *err, int errlen) {
	*out = NULL;
	if (nshaders > DFM_MAX_SHADERS) {
		snprintf(err, errlen, "too many shaders");
		return -1;
	}
	@autoreleasepool {
		id<MTLDevice> dev = MTLCreateSystemDefaultDevice();
		if (!dev) {
			snprintf(err, errlen, "no Metal device");
			return -1;
		}
		const char *why = capable(dev);
		if (why) {
			snprintf(err, errlen, "%s", why);
			[dev release];
			return -1;
		}
		dfmtl *c = calloc(1, sizeof *c);
		c->dev = dev;
		c->queue = [dev newCommandQueue];
		MTLCompileOptions *opt = [[MTLCompileOptions alloc] init];
		opt.fastMathEnabled = NO; // IEEE exp, division and sqrt, as the tolerances assume
		for (int i = 0; i < nshaders; i++) {
			NSError *e = nil;
			NSString *s = [NSString stringWithUTF8String:src[i]];
			id<MTLLibrary> lib = [dev newLibraryWithSource:s options:opt error:&e];
			id<MTLFunction> fn = lib ? [lib newFunctionWithName:@"main0"] : nil;
			id<MTLComputePipelineState> p = fn ? [dev newComputePipelineStateWithFunction:fn error:&e] : nil;
			[fn release];
			[lib release];
			if (!p || p.maxTotalThreadsPerThreadgroup < DFM_LOCAL_SIZE) {
				snprintf(err, errlen, "shader %d: %s", i,
				         e ? [[e localizedDescription] UTF8String] : "pipeline takes fewer than 64 threads");
				[p release];
				[opt release];
				dfmtl_close(c);
				return -1;
			}
			c->pipes[c->npipes++] = p;
		}
		[opt release];
		memset(info, 0, sizeof *info);
		snprintf(info->name, sizeof info->name, "%s", [dev.name UTF8String]);
		info->unified = dev.hasUnifiedMemory ? 1 : 0;
		info->maxBuffer = dev.maxBufferLength;
		info->workingSet = dev.recommendedMaxWorkingSetSize;
		*out = c;
	}
	return 0;
}

void *dfmtl_slot(dfmtl *c, int i, uint64_t bytes) {
	if (i < 0 || i >= DFM_SLOTS) return NULL;
	if (bytes < 16) bytes = 16;
	bytes = (bytes + 255) & ~(uint64_t)255;
	id<MTLBuffer> b = c->bufs[i];
	if (b && b.length >= bytes) return b.contents;
	if (b && bytes < b.length + b.length / 2) bytes = (b.length + b.length / 2 + 255) & ~(uint64_t)255;
	[b release];
	@autoreleasepool {
		c->bufs[i] = [c->dev newBufferWithLength:bytes options:MTLResourceStorageModeShared];
	}
	return c->bufs[i] ? c->bufs[i].contents : NULL;
}

// Go threads have no autorelease pool: every entry point that receives
// autoreleased objects drains its own, after retaining what it keeps.
int dfmtl_begin(dfmtl *c) {
	[c->enc release];
	[c->cmd release];
	c->enc = nil;
	@autoreleasepool {
		c->cmd = [[c->queue commandBuffer] retain];
		if (!c->cmd) return -1;
		// Serial dispatch over tracked buffers: each dispatch sees the
		// writes of the ones before it.
		c->enc = [[c->cmd computeCommandEncoder] retain];
	}
	return c->enc ? 0 : -1;
}

// lookup returns the slot or resident buffer behind a buffer number, nil
// if none. (No parameter is named id: it would hide Objective-C's id type
// in the body, as it once did in dfmtl_upload, which then did not compile.)
static id<MTLBuffer> lookup(dfmtl *c, int buf) {
	if (buf >= 0 && buf < DFM_SLOTS) return c->bufs[buf];
	if (buf >= DFM_SLOTS && buf < DFM_SLOTS + c->nres) return c->res[buf - DFM_SLOTS];
	return nil;
}

int dfmtl_dispatch(dfmtl *c, int shader, const int *slots, int nslots, const void *push, int pushBytes, uint32_t gx,
                   uint32_t gy, uint32_t local) {
	if (shader < 0 || shader >= c->npipes || nslots < 0 || nslots > DFM_MAX_BINDINGS || !c->enc) return -1;
	// A pipeline may take fewer threads than the shader's width (its
	// registers): the call then runs on the CPU.
	if (local == 0 || local > c->pipes[shader].maxTotalThreadsPerThreadgroup) return -1;
	for (int i = 0; i < nslots; i++)
		if (!lookup(c, slots[i])) return -1;
	@autoreleasepool {
		[c->enc setComputePipelineState:c->pipes[shader]];
		if (pushBytes > 0) [c->enc setBytes:push length:(NSUInteger)pushBytes atIndex:0];
		for (int i = 0; i < nslots; i++) [c->enc setBuffer:lookup(c, slots[i]) offset:0 atIndex:(NSUInteger)i + 1];
		[c->enc dispatchThreadgroups:MTLSizeMake(gx, gy, 1) threadsPerThreadgroup:MTLSizeMake(local, 1, 1)];
	}
	return 0;
}

int dfmtl_submit(dfmtl *c) {
	if (!c->enc) return -1;
	int r;
	@autoreleasepool {
		[c->enc endEncoding];
		[c->cmd commit];
		[c->cmd waitUntilCompleted];
		r = c->cmd.status == MTLCommandBufferStatusCompleted ? 0 : -1;
	}
	[c->enc release];
	[c->cmd release];
	c->enc = nil;
	c->cmd = nil;
	return r;
}

int dfmtl_upload(dfmtl *c, const void *data, uint64_t bytes, int *buf) {
	*buf = -1;
	int idx = -1;
	for (int i = 0; i < c->nres && idx < 0; i++)
		if (!c->res[i]) idx = i;
	if (idx < 0) {
		id<MTLBuffer> *grown = realloc(c->res, (size_t)(c->nres + 1) * sizeof *grown);
		if (!grown) return -1;
		c->res = grown;
		c->res[c->nres] = nil;
		idx = c->nres++;
	}
	@autoreleasepool {
		c->res[idx] = bytes > 0 ? [c->dev newBufferWithBytes:data length:bytes options:MTLResourceStorageModeShared]
		                        : [c->dev newBufferWithLength:16 options:MTLResourceStorageModeShared];
	}
	if (!c->res[idx]) return -1;
	*buf = DFM_SLOTS + idx;
	return 0;
}

void dfmtl_free(dfmtl *c, int buf) {
	if (buf < DFM_SLOTS || buf >= DFM_SLOTS + c->nres) return;
	[c->res[buf - DFM_SLOTS] release];
	c->res[buf - DFM_SLOTS] = nil;
}
