// Foundation/Foundation.h: the few Foundation declarations
// kernels/metal/metal_darwin.m uses, for checkobjc.sh to type-check that file
// on Linux (no macOS SDK here). Written from Apple's documentation
// (developer.apple.com/documentation/foundation and /objectivec); nil is
// ((void *)0) as in Apple's <objc/objc.h>. Not Apple's header; nothing
// here is compiled into Deltafin.
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil ((void *)0)
typedef long NSInteger;
typedef unsigned long NSUInteger;

@protocol NSObject
- (instancetype)retain;
- (oneway void)release;
- (instancetype)autorelease;
@end

@interface NSObject <NSObject>
+ (instancetype)alloc;
- (instancetype)init;
@end

@interface NSString : NSObject
+ (instancetype)stringWithUTF8String:(const char *)nullTerminatedCString;
@property (readonly) const char *UTF8String;
@end

@interface NSError : NSObject
@property (readonly, copy) NSString *localizedDescription;
@end
