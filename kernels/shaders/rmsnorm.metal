#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

struct Params
{
    uint width;
    uint rows;
    float eps;
    uint hasWeight;
};

struct X
{
    float x[1];
};

struct Y
{
    float y[1];
};

struct Wt
{
    float wt[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

kernel void main0(constant Params& pc [[buffer(0)]], const device X& _60 [[buffer(1)]], const device Wt& _164 [[buffer(2)]], device Y& _150 [[buffer(3)]], uint3 gl_LocalInvocationID [[thread_position_in_threadgroup]], uint3 gl_WorkGroupID [[threadgroup_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    threadgroup float part[64];
    uint lid = gl_LocalInvocationID.x;
    float _158;
    for (uint r = gl_WorkGroupID.x; r < pc.rows; r += gl_NumWorkGroups.x)
    {
        uint o = r * pc.width;
        float ss = 0.0;
        for (uint c = lid; c < pc.width; c += 64u)
        {
            ss += (_60.x[o + c] * _60.x[o + c]);
        }
        part[lid] = ss;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint h = 32u; h > 0u; h = h >> uint(1))
        {
            if (lid < h)
            {
                part[lid] += part[lid + h];
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        float inv = 1.0 / sqrt((part[0] / float(pc.width)) + pc.eps);
        for (uint c_1 = lid; c_1 < pc.width; c_1 += 64u)
        {
            float v = _60.x[o + c_1] * inv;
            if (pc.hasWeight != 0u)
            {
                _158 = _164.wt[c_1] * v;
            }
            else
            {
                _158 = v;
            }
            _150.y[o + c_1] = _158;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

