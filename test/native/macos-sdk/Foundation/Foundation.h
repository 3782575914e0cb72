// A declarations-only stand-in for the parts of Apple's Foundation that
// native/metal/metal-device.mm uses, so test/native/target-toolchains.test.ts can compile that
// Objective-C++ file on Linux (clang, ARC, libc++). Declarations follow Apple's SDK headers.
#pragma once
#pragma clang assume_nonnull begin
typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil nullptr
typedef unsigned long NSUInteger;
typedef long NSInteger;
@protocol NSObject
@end
__attribute__((objc_root_class))
@interface NSObject<NSObject>
+ (instancetype)new;
+ (instancetype)alloc;
- (instancetype)init;
@end
@interface NSString : NSObject
+ (nullable instancetype)stringWithUTF8String:(const char* _Nonnull)s;
@property(nullable, readonly) const char* UTF8String;
@end
@interface NSError : NSObject
@property(readonly, copy) NSString* _Nonnull localizedDescription;
@end
#pragma clang assume_nonnull end
