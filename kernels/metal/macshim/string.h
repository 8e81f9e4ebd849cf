// string.h: what metal_darwin.m uses of it, for checkobjc.sh (no macOS SDK here).
#pragma once
#include <stddef.h>
void *memset(void *b, int c, size_t len);
