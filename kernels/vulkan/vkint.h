// Internal to kernels/vulkan's C files (vk.c: slots and calls; vkopen.c:
// the loader, the device and its queues): the entry points resolved from
// the loader and the state of one opened device.
#ifndef DF_VKINT_H
#define DF_VKINT_H

#include "vk.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The loader is opened at run time, not linked: a deltafin binary must start
// (and fall back to the CPU kernels) on a machine without libvulkan1.
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#define DFVK_FUNCS(F)                                                                                                \
	F(vkCreateInstance) F(vkDestroyInstance) F(vkEnumeratePhysicalDevices) F(vkGetPhysicalDeviceProperties)           \
	F(vkGetPhysicalDeviceQueueFamilyProperties) F(vkGetPhysicalDeviceMemoryProperties) F(vkCreateDevice)             \
	F(vkDestroyDevice) F(vkGetDeviceQueue) F(vkDeviceWaitIdle) F(vkCreateDescriptorSetLayout)                        \
	F(vkDestroyDescriptorSetLayout) F(vkCreatePipelineLayout) F(vkDestroyPipelineLayout) F(vkCreateShaderModule)     \
	F(vkDestroyShaderModule) F(vkCreateComputePipelines) F(vkDestroyPipeline) F(vkCreateDescriptorPool)              \
	F(vkDestroyDescriptorPool) F(vkResetDescriptorPool) F(vkAllocateDescriptorSets) F(vkUpdateDescriptorSets)        \
	F(vkCreateCommandPool) F(vkDestroyCommandPool) F(vkAllocateCommandBuffers) F(vkResetCommandBuffer)               \
	F(vkBeginCommandBuffer) F(vkEndCommandBuffer) F(vkCmdPipelineBarrier) F(vkCmdBindPipeline)                       \
	F(vkCmdBindDescriptorSets) F(vkCmdPushConstants) F(vkCmdDispatch) F(vkQueueSubmit) F(vkCreateFence)              \
	F(vkDestroyFence) F(vkWaitForFences) F(vkResetFences) F(vkCreateBuffer) F(vkDestroyBuffer)                       \
	F(vkGetBufferMemoryRequirements) F(vkAllocateMemory) F(vkFreeMemory) F(vkBindBufferMemory) F(vkMapMemory)       \
	F(vkCmdCopyBuffer) F(vkCreateQueryPool) F(vkDestroyQueryPool) F(vkCmdResetQueryPool) F(vkCmdWriteTimestamp)           \
	F(vkGetQueryPoolResults) F(vkCreateSemaphore) F(vkDestroySemaphore)

// Hidden: the pointers bear the loader's names, which the binary must not
// export (the loader's own calls could resolve to them).
#define DFVK_DECLARE(n) extern __attribute__((visibility("hidden"))) PFN_##n n;
DFVK_FUNCS(DFVK_DECLARE)

typedef struct {
	VkBuffer buf;
	VkDeviceMemory mem;
	void *map;
	VkDeviceSize size;
} slot;

#define DFVK_XQUERIES 64 // timestamps of a call's copies: two a copy

// A frame records and runs one call: its command buffers (the copies of
// its operands on the transfer queue, its shaders on the compute queue,
// its results' copies back on the back queue), the semaphores between
// them, its descriptor pool, fence and part of the
// query pool, so that the host can fill the slots of the next call while
// the device runs this one (dfvk_submit with wait 0, dfvk_wait).
typedef struct {
	VkCommandBuffer cmd;  // the shaders
	VkCommandBuffer xcmd; // the operands' copies
	VkCommandBuffer bcmd; // the copies back that end the call
	VkSemaphore copied;   // xcmd's end, which cmd waits for
	VkSemaphore computed; // cmd's end, which bcmd waits for
	VkDescriptorPool pool;
	VkFence fence;
	int pending;    // submitted and not yet waited for
	int nq;         // timestamps of shaders recorded in this call
	int qover;      // the call had more than DFVK_QUERIES: not timed
	int nx;         // timestamps of copies recorded in this call
	int xover;      // more than DFVK_XQUERIES - 2: the copies not timed
	int parity;     // which of the frame's two copy ranges this call stamps
	int copies;     // copies recorded in this call
	int dispatched; // a shader has been recorded in this call
	// The copies back (dfvk_back), recorded on bcmd at submit and stamped
	// in the frame's copy range from query xb0 on (the operands' copies
	// before it).
	int lazy[DFVK_BACKS];
	uint64_t lazyBytes[DFVK_BACKS];
	int nlazy;
	int xb0;
	int timed; // the call stamps its operations (qpool and timing when it began)
} frame;

struct dfvk {
	VkInstance inst;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;  // compute
	VkQueue xqueue; // the operands' copies: a transfer-only family's where the device has one, else queue
	VkQueue bqueue; // the copies back that end a call: a second queue of xfamily where it has one, else queue
	uint32_t family, xfamily;
	int xdedicated; // xqueue is a transfer-only family's (the GPU's copy engines)
	int bown;       // bqueue is xfamily's second queue, not queue
	uint32_t memType;
	uint32_t localBits; // memory types with DEVICE_LOCAL, as a mask
	VkDescriptorSetLayout setLayout;
	VkPipelineLayout pipeLayout;
	VkPipeline *pipes;
	VkShaderModule *mods;
	int npipes;
	VkCommandPool cmdPool, xcmdPool; // xcmdPool: xfamily's, where it is not family
	frame fr[DFVK_FRAMES];
	int cur;         // the frame being recorded
	VkFence fence;   // dfvk_upload's
	slot slots[DFVK_SLOTS];
	// Device-local twins of the slots (twins set: a discrete or software
	// device): the shaders bind these, and dfvk_copy moves a call's
	// operands from a slot to its twin by DMA, so that no shader reads
	// host memory across the bus (a tile of x read over PCIe by every
	// workgroup cost more than the arithmetic).
	slot twin[DFVK_SLOTS];
	int twins;
	// Resident buffers (ids DFVK_SLOTS + i): device-local copies of weights
	// that never change, filled through the staging buffer by ucmd.
	slot *res;
	int nres;
	slot staging;
	VkCommandBuffer ucmd;
	// The device's own clock (qpool set where the compute queue has
	// timestamps): a pair of timestamps around each dispatch and each copy
	// of a call, read after its fence and summed into shaderNs and copyNs,
	// so that a benchmark can tell the shaders' time from the bus's and the
	// host's. Frame f's shaders stamp queries f·DFVK_QUERIES onwards, its
	// copies one of two ranges of DFVK_XQUERIES after all of those (xbase):
	// the transfer queue cannot reset queries, so each call's compute side
	// resets the range the frame's next call will stamp; on a Vulkan 1.2
	// device (hostReset) the host resets each call's ranges once it has
	// read them instead.
	VkQueryPool qpool;
	int xtimed; // xqueue has timestamps
	int btimed; // bqueue has timestamps
	double tsPeriod; // nanoseconds a tick
	uint64_t tsMask, xtsMask, btsMask;
	uint64_t shaderNs, copyNs;
	int hostReset; // the host resets each call's queries once read (Vulkan 1.2)
	int canHostReset;
	int timing;  // dfvk_timing: the calls begun from now on are timed
	int tracing; // dfvk_trace: keep each waited call's span
	int nspans;
	dfvk_span spans[DFVK_SPANS];
};

#define MAX_SETS 64

extern __attribute__((visibility("hidden"))) PFN_vkResetQueryPool dfvkResetQueryPool;

// The first query of frame f's copy range of parity p.
static inline uint32_t xbase(int f, int p) { return (uint32_t)(DFVK_FRAMES * DFVK_QUERIES + (2 * f + p) * DFVK_XQUERIES); }

// The query of the moment frame f's call of parity p began on the compute
// queue: its copy range's last, which the copies leave unstamped.
static inline uint32_t startQuery(int f, int p) { return xbase(f, p) + DFVK_XQUERIES - 1; }

// dfvk_load resolves the entry points once; it returns NULL or why not.
const char *dfvk_load(void) __attribute__((visibility("hidden")));
void dfvk_seterr(char *err, int len, const char *what, int res) __attribute__((visibility("hidden")));
// dfvk_new_buffer creates a buffer of bytes with usage in a memory type
// from bits (the first the buffer accepts), mapped when map is set; shared
// between the compute and the transfer queue's families when shared is set.
VkResult dfvk_new_buffer(dfvk *c, slot *s, uint64_t bytes, VkBufferUsageFlags usage, uint32_t bits, int map, int shared)
    __attribute__((visibility("hidden")));
// dfvk_reset_queries resets every query of qpool once the calls still
// running are over, waiting for the reset.
VkResult dfvk_reset_queries(dfvk *c) __attribute__((visibility("hidden")));

#endif
