// What the Metal compiler knows before any header, for the MSL dialect check
// (test/native/metal-dialect.test.ts): clang parses the embedded kernel library with this
// header forced in front, <metal_stdlib> from this folder and no C++ standard library, so a
// kernel that uses a name MSL lacks, or mixes address spaces as the Metal compiler would
// refuse, fails the check.
#pragma once

// Address spaces as clang's numbered ones: a pointer or reference into one does not convert
// to another, as in MSL. `thread` is the default; threadgroup variables are function statics
// (a C++ automatic variable cannot carry an address space).
#define device __attribute__((address_space(1)))
#define constant const __attribute__((address_space(2)))
#define threadgroup static __attribute__((address_space(3)))
#define thread
#define kernel
// A helper's parameter pointing into threadgroup memory (prelude.metal's BS_TG_PTR).
#define BS_TG_PTR __attribute__((address_space(3)))

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long int64_t;
typedef unsigned long uint64_t;
typedef unsigned long size_t;

// MSL's built-in half and vector types: clang's, so they copy out of any address space.
typedef _Float16 half;
typedef uint uint2 __attribute__((ext_vector_type(2)));
typedef uint uint3 __attribute__((ext_vector_type(3)));

// What MSL leaves out of C++ (the specification's "Metal restrictions"), refused by name from
// here on: the kernel sources follow this header.
#pragma clang poison double std new delete throw try catch goto virtual typeid dynamic_cast thread_local
