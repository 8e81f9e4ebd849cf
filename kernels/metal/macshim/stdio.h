// stdio.h: what metal_darwin.m uses of it, for checkobjc.sh (no macOS SDK here).
#pragma once
#include <stddef.h>
int snprintf(char *str, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
