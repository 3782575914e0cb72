// A declarations-only stand-in for the parts of Metal.framework that
// native/metal/metal-device.mm uses (selectors, properties and enum values as in Apple's SDK
// headers), for test/native/target-toolchains.test.ts. Nothing here runs.
#pragma once
#import <Foundation/Foundation.h>
#include <stdint.h>
#pragma clang assume_nonnull begin
typedef struct {
  NSUInteger width, height, depth;
} MTLSize;
MTLSize MTLSizeMake(NSUInteger width, NSUInteger height, NSUInteger depth);
typedef NSUInteger MTLResourceOptions;
enum { MTLResourceStorageModeShared = 0 << 4 };
// macOS 15 and later (the .mm checks __MAC_15_0 before using it).
typedef NSInteger MTLMathMode;
enum { MTLMathModeSafe = 0, MTLMathModeRelaxed = 1, MTLMathModeFast = 2 };
typedef NSInteger MTLMathFloatingPointFunctions;
enum { MTLMathFloatingPointFunctionsFast = 0, MTLMathFloatingPointFunctionsPrecise = 1 };
typedef NSUInteger MTLCommandBufferStatus;
enum {
  MTLCommandBufferStatusNotEnqueued = 0,
  MTLCommandBufferStatusEnqueued = 1,
  MTLCommandBufferStatusCommitted = 2,
  MTLCommandBufferStatusScheduled = 3,
  MTLCommandBufferStatusCompleted = 4,
  MTLCommandBufferStatusError = 5
};
@protocol MTLBuffer <NSObject>
- (void* _Nonnull)contents;
@property(readonly) NSUInteger length;
@end
@protocol MTLFunction <NSObject>
@end
@protocol MTLLibrary <NSObject>
- (nullable id<MTLFunction>)newFunctionWithName:(NSString* _Nonnull)functionName;
@end
@protocol MTLComputePipelineState <NSObject>
@property(readonly) NSUInteger maxTotalThreadsPerThreadgroup;
@property(readonly) NSUInteger threadExecutionWidth;
@end
@protocol MTLComputeCommandEncoder <NSObject>
- (void)setComputePipelineState:(id<MTLComputePipelineState> _Nonnull)state;
- (void)setBuffer:(nullable id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:(NSUInteger)index;
- (void)setBytes:(const void* _Nonnull)bytes length:(NSUInteger)length atIndex:(NSUInteger)index;
- (void)dispatchThreadgroups:(MTLSize)threadgroupsPerGrid threadsPerThreadgroup:(MTLSize)threadsPerThreadgroup;
- (void)endEncoding;
@end
@protocol MTLCommandBuffer <NSObject>
- (nullable id<MTLComputeCommandEncoder>)computeCommandEncoder;
- (void)commit;
- (void)waitUntilCompleted;
@property(readonly) MTLCommandBufferStatus status;
@property(nullable, readonly) NSError* error;
@end
@protocol MTLCommandQueue <NSObject>
- (nullable id<MTLCommandBuffer>)commandBuffer;
@end
@interface MTLCompileOptions : NSObject
@property(readwrite) BOOL fastMathEnabled;
@property(readwrite) MTLMathMode mathMode;
@property(readwrite) MTLMathFloatingPointFunctions mathFloatingPointFunctions;
@end
@protocol MTLDevice <NSObject>
@property(nonnull, readonly) NSString* name;
@property(readonly) uint64_t recommendedMaxWorkingSetSize;
- (nullable id<MTLCommandQueue>)newCommandQueue;
- (nullable id<MTLLibrary>)newLibraryWithSource:(NSString* _Nonnull)source
                                        options:(nullable MTLCompileOptions*)options
                                          error:(NSError* _Nullable* _Nullable)error;
- (nullable id<MTLBuffer>)newBufferWithLength:(NSUInteger)length options:(MTLResourceOptions)options;
- (nullable id<MTLBuffer>)newBufferWithBytesNoCopy:(void* _Nonnull)pointer
                                            length:(NSUInteger)length
                                           options:(MTLResourceOptions)options
                                       deallocator:
                                           (void (^_Nullable)(void* _Nonnull pointer, NSUInteger length))deallocator;
- (nullable id<MTLComputePipelineState>)newComputePipelineStateWithFunction:(id<MTLFunction> _Nonnull)computeFunction
                                                                      error:(NSError* _Nullable* _Nullable)error;
@end
id<MTLDevice> _Nullable MTLCreateSystemDefaultDevice(void);
#pragma clang assume_nonnull end
