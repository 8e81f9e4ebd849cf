#include <metal_stdlib>
#include <simd/simd.h>

using namespace metal;

struct Params
{
    uint T;
    uint past;
    uint nh;
    uint nope;
    uint rope;
    uint dv;
    uint kpeStride;
    uint kpeOff;
};

struct K
{
    float k[1];
};

struct KV
{
    float kv[1];
};

struct KPE
{
    float kpe[1];
};

struct V
{
    float v[1];
};

constant uint3 gl_WorkGroupSize [[maybe_unused]] = uint3(64u, 1u, 1u);

kernel void main0(constant Params& pc [[buffer(0)]], const device KV& _101 [[buffer(1)]], const device KPE& _129 [[buffer(2)]], device K& _92 [[buffer(3)]], device V& _151 [[buffer(4)]], uint3 gl_GlobalInvocationID [[thread_position_in_grid]], uint3 gl_NumWorkGroups [[threadgroups_per_grid]])
{
    uint i = gl_GlobalInvocationID.x + ((gl_GlobalInvocationID.y * gl_NumWorkGroups.x) * 64u);
    uint qk = pc.nope + pc.rope;
    uint w = qk + pc.dv;
    uint th = i / w;
    uint c = i - (th * w);
    if (th >= (pc.T * pc.nh))
    {
        return;
    }
    uint t = th / pc.nh;
    uint row = (pc.past * pc.nh) + th;
    if (c < pc.nope)
    {
        _92.k[(row * qk) + c] = _101.kv[(th * (pc.nope + pc.dv)) + c];
    }
    else
    {
        if (c < qk)
        {
            _92.k[(row * qk) + c] = _129.kpe[((t * pc.kpeStride) + pc.kpeOff) + (c - pc.nope)];
        }
        else
        {
            _151.v[(row * pc.dv) + (c - qk)] = _101.kv[((th * (pc.nope + pc.dv)) + pc.nope) + (c - qk)];
        }
    }
}

