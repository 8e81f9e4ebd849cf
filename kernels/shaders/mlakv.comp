#version 450
// The keys and values of a latent attention's new positions
// (kernels.LatentAttn.FillKV), from kv_b's outputs and the RoPE-width key
// columns every head shares:
//
//   k[past+t, h] = [kv[t, h, :nope] | kpe[t·kpeStride + kpeOff ..]]
//   v[past+t, h] = kv[t, h, nope:]
//
// One invocation a float written; plain copies, so the bits are the host's.
//
// kv: [T, nh, nope+dv]; kpe: T rows of kpeStride; k: [past+T, nh, nope+rope];
// v: [past+T, nh, dv].
layout(local_size_x = 64) in;

layout(std430, binding = 1) readonly buffer KV { float kv[]; };
layout(std430, binding = 2) readonly buffer KPE { float kpe[]; };
layout(std430, binding = 3) writeonly buffer K { float k[]; };
layout(std430, binding = 4) writeonly buffer V { float v[]; };

layout(push_constant) uniform Params {
    uint T;
    uint past;
    uint nh;
    uint nope;
    uint rope;
    uint dv;
    uint kpeStride;
    uint kpeOff;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    uint qk = pc.nope + pc.rope, w = qk + pc.dv;
    uint th = i / w, c = i - th * w; // (t, h) and the column of its key, then value
    if (th >= pc.T * pc.nh) return;
    uint t = th / pc.nh, row = pc.past * pc.nh + th; // row of k and v
    if (c < pc.nope) {
        k[row * qk + c] = kv[th * (pc.nope + pc.dv) + c];
    } else if (c < qk) {
        k[row * qk + c] = kpe[t * pc.kpeStride + pc.kpeOff + (c - pc.nope)];
    } else {
        v[row * pc.dv + (c - qk)] = kv[th * (pc.nope + pc.dv) + pc.nope + (c - qk)];
    }
}
