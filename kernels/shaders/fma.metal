#pragma clang diagnostic ignored "-Wmissing-prototypes"
#pragma clang diagnostic ignored "-Wmissing-braces"

#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

template<typename T, size_t Num>
struct spvUnsafeArray
{
    T elements[Num ? Num : 1];
    
    thread T& operator [] (size_t pos) thread
    {
        return elements[pos];
    }
    constexpr const thread T& operator [] (size_t pos) const thread
    {
        return elements[pos];
    }
    
    device T& operator [] (size_t pos) device
    {
        return elements[pos];
    }
    constexpr const device T& operator [] (size_t pos) const device
    {
        return elements[pos];
    }
    
    constexpr const constant T& operator [] (size_t pos) const constant
    {
        return elements[pos];
    }
    
    threadgroup T& operator [] (size_t pos) threadgroup
    {
        return elements[pos];
    }
    constexpr const threadgroup T& operator [] (size_t pos) const threadgroup
    {
        return elements[pos];
    }
};

struct Params
{
    uint steps;
    float a;
    float b;
};

struct Y
{
    float y[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

kernel void main0(constant Params& pc [[buffer(0)]], device Y& _168 [[buffer(1)]], uint3 gl_GlobalInvocationID [[thread_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    spvUnsafeArray<float4, 8> v;
    for (uint i = 0u; i < 8u; i++)
    {
        v[i] = float4(4.0 * float(i)) + float4(0.0, 1.0, 2.0, 3.0);
    }
    float4 a = float4(pc.a);
    float4 b = float4(pc.b);
    for (uint s = 0u; s < pc.steps; s += 4u)
    {
        for (uint u = 0u; u < 4u; u++)
        {
            v[0] = fma(v[0], a, b);
            v[1] = fma(v[1], a, b);
            v[2] = fma(v[2], a, b);
            v[3] = fma(v[3], a, b);
            v[4] = fma(v[4], a, b);
            v[5] = fma(v[5], a, b);
            v[6] = fma(v[6], a, b);
            v[7] = fma(v[7], a, b);
        }
    }
    float t = 0.0;
    for (uint i_1 = 0u; i_1 < 8u; i_1++)
    {
        t += ((v[i_1].x + v[i_1].y) + (v[i_1].z + v[i_1].w));
    }
    _168.y[gl_GlobalInvocationID.x + ((gl_GlobalInvocationID.y * gl_NumWorkGroups.x) * 64u)] = t;
}

