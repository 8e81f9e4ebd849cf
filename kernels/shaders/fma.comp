#version 450
// The device's fp32 multiply-add peak (kernels.DevicePeaker): every thread
// runs 8 independent vec4 chains of v = v·a + b for pc.steps steps (a and b
// come from the push constants, so the compiler can fold nothing) and
// writes the sum of its 32 lanes, lane j starting at j. With a = b = 1 that
// sum is 496 + 32·steps, which the host checks: the work was done. The
// steps go four to an iteration (steps is a multiple of 4), so the loop's
// own instructions take about 2% of the issue slots.
layout(local_size_x = 64) in;

layout(std430, binding = 1) writeonly buffer Y { float y[]; };

layout(push_constant) uniform Params {
    uint steps;
    float a;
    float b;
} pc;

void main() {
    vec4 v[8];
    for (uint i = 0u; i < 8u; i++) v[i] = vec4(4.0 * float(i)) + vec4(0.0, 1.0, 2.0, 3.0);
    vec4 a = vec4(pc.a), b = vec4(pc.b);
    for (uint s = 0u; s < pc.steps; s += 4u) {
        for (uint u = 0u; u < 4u; u++) {
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
    for (uint i = 0u; i < 8u; i++) t += (v[i].x + v[i].y) + (v[i].z + v[i].w);
    y[gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u] = t;
}
