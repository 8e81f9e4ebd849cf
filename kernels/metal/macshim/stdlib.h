// stdlib.h: what metal_darwin.m uses of it, for checkobjc.sh (no macOS SDK here).
#pragma once
#include <stddef.h>
void *calloc(size_t count, size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);
