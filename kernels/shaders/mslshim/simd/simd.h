// simd/simd.h: empty stand-in (see ../metal_stdlib); the generated MSL includes it
// but uses none of it.
#pragma once
