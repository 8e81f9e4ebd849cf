// Thin host glue over the Vulkan C API for kernels/vulkan: one device, a
// compute queue and a queue for the operands' copies (a transfer-only one
// where the device has it), one pipeline per shader, host-visible buffers
// in numbered slots, and two command buffers recorded per call (its copies
// and its shaders). Not thread-safe: the Go side serialises every call.
// vk.c has the calls, vkopen.c the loader and the device, vkint.h what the
// two share.
#ifndef DF_VK_H
#define DF_VK_H

#include <stddef.h>
#include <stdint.h>

#define DFVK_SLOTS 32 // two sets of 16: a call's and the next one's, filled while it runs
#define DFVK_FRAMES 2 // calls recorded or running at once
#define DFVK_MAX_BINDINGS 8
#define DFVK_PUSH_BYTES 32
#define DFVK_QUERIES 512 // timestamps of a call's shaders: two for each dispatch

typedef struct dfvk dfvk;

typedef struct {
	char name[256];
	int type;            // VkPhysicalDeviceType: 1 integrated, 2 discrete, 3 virtual, 4 cpu
	uint32_t api;        // VkPhysicalDeviceProperties.apiVersion
	uint32_t vendor;
	uint64_t maxBuffer;  // the largest storage buffer a shader may bind
	uint32_t maxGroups;  // maxComputeWorkGroupCount[0], [1] (the smaller)
	uint64_t localHeap;  // the largest DEVICE_LOCAL memory heap, bytes
	int transferQueue;   // the operands' copies run on a transfer-only queue (the copy engines)
	int backQueue;       // the results' copies back run on a queue of their own (a second transfer-only one)
} dfvk_info;

// dfvk_open creates the instance and a device: the physical device whose
// type ranks highest in prefer (a list of VkPhysicalDeviceType, best first;
// types not listed are never taken) with a compute queue, then one compute
// pipeline per SPIR-V module. Returns a VkResult (0 on success) or -1 when no
// device qualifies; err gets a message.
int dfvk_open(dfvk **out, const int *prefer, int nprefer, const uint32_t *const *code, const size_t *codeBytes,
              int nshaders, dfvk_info *info, char *err, int errlen);
void dfvk_close(dfvk *c);

// dfvk_slot makes slot hold at least bytes and returns its mapped memory
// (host-visible, coherent), or NULL with *res set.
void *dfvk_slot(dfvk *c, int slot, uint64_t bytes, int *res);

// A call: dfvk_begin on a frame (0 or 1; it first waits for that frame's
// last call), its operands' dfvk_copy, any number of dfvk_dispatch (each
// waits for the ones before), dfvk_submit (runs them; with wait 0 it
// returns at once and dfvk_wait on the frame waits for them). Each call's
// shaders see the writes of every call before it (the copies back of the
// call before may still run beside them: no call writes a twin that a
// running call copies back); its operands' copies run
// on the copy queue and wait only for the copies before them, so they
// cross the bus while the other frame's call still computes: the host may
// fill the slots of the next call while the other frame's runs, never
// slots that call reads or writes. Slots must not grow between begin and submit; growing one, or
// freeing a buffer, first waits for every call.
int dfvk_begin(dfvk *c, int frame);
int dfvk_dispatch(dfvk *c, int shader, const int *slots, int nslots, const void *push, int pushBytes, uint32_t gx,
                  uint32_t gy, uint32_t gz);
int dfvk_submit(dfvk *c, int wait);
int dfvk_wait(dfvk *c, int frame);
// dfvk_copy records, between begin and the call's first dispatch, a copy of
// the first bytes of slot i from its mapped memory to the device-local twin
// the shaders bind; nothing where the device has no twins (an integrated
// GPU). Returns -1 for a bad slot or size, or after a dispatch.
int dfvk_copy(dfvk *c, int i, uint64_t bytes);

// dfvk_back records the copy of the first bytes of slot i's twin back to
// its mapped memory, which dfvk_slot shows once the call is over: the
// call's results; nothing where the device has no twins. The copies back
// end a call (a dispatch after one returns -1): they run once its shaders
// are over, as a submission of their own that waits for the shaders'
// semaphore, on a second transfer queue where the device has one (the
// frame's fence after them), so the next call's shaders start while they
// cross the bus. On the shaders' queue they held the next piece of a
// product back for as long as its results took to cross
// (kernels/README.md, "Issue 33, twelfth session"). A device with one
// transfer queue (or none) submits them to the shaders' queue. Binding the
// mapped memory itself instead (the shaders writing results across the
// bus, tried in 3397c92) made an NVIDIA H100's product shaders 3.6× slower
// (kernels/README.md). At most DFVK_BACKS a call; returns -1 for a bad
// slot or size, or past that.
int dfvk_back(dfvk *c, int i, uint64_t bytes);
#define DFVK_BACKS 8

// dfvk_times reports the device's time in the shaders and in the copies of
// every timed call so far (nanoseconds, by its own timestamps around each
// operation); 0 when the device has no timestamps. A call of more than
// DFVK_QUERIES/2 shaders or more than DFVK_XQUERIES/2 - 1 copies is not
// counted. The copies run on their own queue, beside the shaders of the
// call before: each one's time is its own run, so the two may add up to
// more than the device's busy time.
int dfvk_times(dfvk *c, uint64_t *shaderNs, uint64_t *copyNs);

// dfvk_timing turns the timestamps of the calls begun from then on on (the
// default, where the device has them) or off, waiting for the calls still
// running; -1 to turn them on where the device has none. An untimed call
// adds nothing to dfvk_times and keeps no span: what the timestamps, their
// resets and the waits they imply cost a call is the difference.
int dfvk_timing(dfvk *c, int on);

// dfvk_host_resets chooses who resets the calls' timestamps: the host once
// it has read them (on, the default on a Vulkan 1.2 device; -1 where the
// device is older) or each call's own commands (off, as on a Vulkan 1.0 or
// 1.1 device), after the calls still running. For the tests, which hold
// both to the validation layer on lavapipe.
int dfvk_host_resets(dfvk *c, int on);

// dfvk_span is one timed call on the device's clock (nanoseconds from its
// own epoch; both 0 where the call had no such operation): the first and
// last timestamps of its operands' copies, of its shaders and of its
// copies back, and start, when the compute queue took the call up (its
// wait for the copies in over, before its query resets and its first
// barrier). With dfvk_trace on, dfvk_wait keeps the span of each call
// it waits for, up to DFVK_SPANS (later ones are dropped), and dfvk_spans
// hands them over oldest first and forgets them: where a product's pieces
// leave the device idle between their shaders, and whether the host's
// submission, the bus or the semaphores held the next one back, is what
// the benchmarks read from them (the queues' clocks are the device's one
// timer on NVIDIA and lavapipe; Vulkan promises it only within a queue).
typedef struct {
	uint64_t in[2], sh[2], back[2];
	uint64_t start;
} dfvk_span;
#define DFVK_SPANS 256
void dfvk_trace(dfvk *c, int on);
int dfvk_spans(dfvk *c, dfvk_span *out, int max);

// dfvk_upload copies bytes of data into a new device-local buffer (through a
// host-visible staging buffer, waiting for the copy) and sets *id to a
// buffer id that dfvk_dispatch takes like a slot (>= DFVK_SLOTS). Not
// between begin and submit. Returns a VkResult.
int dfvk_upload(dfvk *c, const void *data, uint64_t bytes, int *id);
// dfvk_free releases a buffer from dfvk_upload; not between begin and submit.
void dfvk_free(dfvk *c, int id);

// dfvk_probe lists the physical device types present without opening one:
// bit t is set when a device of VkPhysicalDeviceType t exists; -1 when
// there is no loader or instance.
int dfvk_probe(void);

#endif
