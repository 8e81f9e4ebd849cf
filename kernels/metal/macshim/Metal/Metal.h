// Metal/Metal.h: the Metal declarations kernels/metal/metal_darwin.m uses,
// with the types Apple's documentation gives them
// (developer.apple.com/documentation/metal: MTLDevice, MTLCommandQueue,
// MTLCommandBuffer, MTLComputeCommandEncoder, MTLBuffer, MTLLibrary,
// MTLComputePipelineState, MTLCompileOptions, MTLSize, MTLGPUFamily,
// MTLResourceOptions, MTLCommandBufferStatus), for checkobjc.sh. Only what
// the file calls is declared, so a message Metal does not have, or one sent
// with the wrong types, fails the check. Not Apple's header; nothing here is
// compiled into Deltafin.
#pragma once
#import <Foundation/Foundation.h>

typedef struct {
	NSUInteger width, height, depth;
} MTLSize;
static inline MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth) {
	MTLSize s = {width, height, depth};
	return s;
}

typedef enum : NSInteger {
	MTLGPUFamilyApple7 = 1007,
	MTLGPUFamilyMac2 = 2002,
	MTLGPUFamilyMetal3 = 5001,
} MTLGPUFamily;

typedef enum : NSUInteger {
	MTLResourceStorageModeShared = 0,
} MTLResourceOptions;

typedef enum : NSUInteger {
	MTLCommandBufferStatusNotEnqueued = 0,
	MTLCommandBufferStatusEnqueued = 1,
	MTLCommandBufferStatusCommitted = 2,
	MTLCommandBufferStatusScheduled = 3,
	MTLCommandBufferStatusCompleted = 4,
	MTLCommandBufferStatusError = 5,
} MTLCommandBufferStatus;

@protocol MTLFunction <NSObject>
@end

@protocol MTLLibrary <NSObject>
- (id<MTLFunction>)newFunctionWithName:(NSString *)functionName;
@end

@protocol MTLComputePipelineState <NSObject>
@property (readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@end

@protocol MTLBuffer <NSObject>
@property (readonly) NSUInteger length;
- (void *)contents;
@end

@protocol MTLComputeCommandEncoder <NSObject>
- (void)setComputePipelineState:(id<MTLComputePipelineState>)state;
- (void)setBytes:(const void *)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)endEncoding;
@end

@protocol MTLCommandBuffer <NSObject>
- (id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)commit;
- (void)waitUntilCompleted;
@property (readonly) MTLCommandBufferStatus status;
@end

@protocol MTLCommandQueue <NSObject>
- (id<MTLCommandBuffer>)commandBuffer;
@end

@interface MTLCompileOptions : NSObject
@property (readwrite, nonatomic) BOOL fastMathEnabled;
@end

@protocol MTLDevice <NSObject>
- (BOOL)supportsFamily:(MTLGPUFamily)gpuFamily;
@property (readonly) MTLSize maxThreadsPerThreadgroup;
@property (readonly) NSUInteger maxThreadgroupMemoryLength;
@property (readonly) NSUInteger maxBufferLength;
@property (readonly) NSString *name;
@property (readonly) BOOL hasUnifiedMemory;
@property (readonly) uint64_t recommendedMaxWorkingSetSize;
- (id<MTLCommandQueue>)newCommandQueue;
- (id<MTLLibrary>)newLibraryWithSource:(NSString *)source options:(MTLCompileOptions *)options error:(NSError **)error;
- (id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction>)computeFunction
                                                             error:(NSError **)error;
- (id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (id<MTLBuffer>)newBufferWithBytes:(const void *)pointer length:(NSUInteger)length options:(MTLResourceOptions)options;
@end

id<MTLDevice> MTLCreateSystemDefaultDevice(void);
