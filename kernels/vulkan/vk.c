#include "vk.h"

#include <dlfcn.h>
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
	F(vkGetQueryPoolResults)

#define DFVK_DECLARE(n) static PFN_##n n;
DFVK_FUNCS(DFVK_DECLARE)

static pthread_once_t loadOnce = PTHREAD_ONCE_INIT;
static const char *loadErr;

// load resolves every entry point from the loader's exported symbols (its
// trampolines dispatch on the handle, so they serve every instance).
static void load(void) {
	void *h = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) h = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		loadErr = "the Vulkan loader libvulkan.so.1 is not installed (Debian: libvulkan1)";
		return;
	}
#define DFVK_LOAD(n)                                                                                                   \
	if (!(n = (PFN_##n)dlsym(h, #n))) {                                                                            \
		loadErr = "the Vulkan loader lacks " #n;                                                               \
		return;                                                                                                \
	}
	DFVK_FUNCS(DFVK_LOAD)
}

typedef struct {
	VkBuffer buf;
	VkDeviceMemory mem;
	void *map;
	VkDeviceSize size;
} slot;

// A frame records and runs one call: its own command buffer, descriptor
// pool, fence and half of the query pool, so that the host can fill the
// slots of the next call while the device runs this one (dfvk_submit with
// wait 0, dfvk_wait).
typedef struct {
	VkCommandBuffer cmd;
	VkDescriptorPool pool;
	VkFence fence;
	int pending;     // submitted and not yet waited for
	int nq;          // timestamps recorded in this call
	int qover;       // the call had more than DFVK_QUERIES: not timed
	int dispatched;  // a shader has been recorded in this call
	uint8_t qcopy[DFVK_QUERIES / 2];
} frame;

struct dfvk {
	VkInstance inst;
	VkPhysicalDevice phys;
	VkDevice dev;
	VkQueue queue;
	uint32_t family;
	uint32_t memType;
	uint32_t localBits; // memory types with DEVICE_LOCAL, as a mask
	VkDescriptorSetLayout setLayout;
	VkPipelineLayout pipeLayout;
	VkPipeline *pipes;
	VkShaderModule *mods;
	int npipes;
	VkCommandPool cmdPool;
	frame fr[DFVK_FRAMES];
	int cur;         // the frame being recorded
	VkFence fence;   // dfvk_upload's
	slot slots[DFVK_SLOTS];
	// Device-local twins of the slots (twins set: a discrete or software
	// device): the shaders bind these, and dfvk_copy moves a call's
	// operands between a slot and its twin by DMA, so that no shader reads
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
	// The device's own clock (qpool set where the queue has timestamps):
	// a pair of timestamps around each dispatch and each copy of a call,
	// read after its fence and summed into shaderNs and copyNs, so that a
	// benchmark can tell the shaders' time from the bus's and the host's.
	// Frame f's timestamps are queries f·DFVK_QUERIES onwards.
	VkQueryPool qpool;
	double tsPeriod; // nanoseconds a tick
	uint64_t tsMask;
	uint64_t shaderNs, copyNs;
};

#define MAX_SETS 64

static void seterr(char *err, int len, const char *what, int res) { snprintf(err, len, "%s (VkResult %d)", what, res); }

void dfvk_close(dfvk *c) {
	if (!c) return;
	if (c->dev) {
		vkDeviceWaitIdle(c->dev);
		for (int i = 0; i < DFVK_SLOTS; i++) {
			if (c->slots[i].buf) vkDestroyBuffer(c->dev, c->slots[i].buf, NULL);
			if (c->slots[i].mem) vkFreeMemory(c->dev, c->slots[i].mem, NULL);
			if (c->twin[i].buf) vkDestroyBuffer(c->dev, c->twin[i].buf, NULL);
			if (c->twin[i].mem) vkFreeMemory(c->dev, c->twin[i].mem, NULL);
		}
		for (int i = 0; i < c->nres; i++) {
			if (c->res[i].buf) vkDestroyBuffer(c->dev, c->res[i].buf, NULL);
			if (c->res[i].mem) vkFreeMemory(c->dev, c->res[i].mem, NULL);
		}
		if (c->staging.buf) vkDestroyBuffer(c->dev, c->staging.buf, NULL);
		if (c->staging.mem) vkFreeMemory(c->dev, c->staging.mem, NULL);
		if (c->fence) vkDestroyFence(c->dev, c->fence, NULL);
		for (int f = 0; f < DFVK_FRAMES; f++) {
			if (c->fr[f].fence) vkDestroyFence(c->dev, c->fr[f].fence, NULL);
			if (c->fr[f].pool) vkDestroyDescriptorPool(c->dev, c->fr[f].pool, NULL);
		}
		if (c->qpool) vkDestroyQueryPool(c->dev, c->qpool, NULL);
		if (c->cmdPool) vkDestroyCommandPool(c->dev, c->cmdPool, NULL);
		for (int i = 0; i < c->npipes; i++) {
			if (c->pipes && c->pipes[i]) vkDestroyPipeline(c->dev, c->pipes[i], NULL);
			if (c->mods && c->mods[i]) vkDestroyShaderModule(c->dev, c->mods[i], NULL);
		}
		if (c->pipeLayout) vkDestroyPipelineLayout(c->dev, c->pipeLayout, NULL);
		if (c->setLayout) vkDestroyDescriptorSetLayout(c->dev, c->setLayout, NULL);
		vkDestroyDevice(c->dev, NULL);
	}
	if (c->inst) vkDestroyInstance(c->inst, NULL);
	free(c->res);
	free(c->pipes);
	free(c->mods);
	free(c);
}

// rank is the position of t in prefer (lower is better), or -1.
static int rank(const int *prefer, int n, int t) {
	for (int i = 0; i < n; i++)
		if (prefer[i] == t) return i;
	return -1;
}

int dfvk_open(dfvk **out, const int *prefer, int nprefer, const uint32_t *const *code, const size_t *codeBytes,
              int nshaders, dfvk_info *info, char *err, int errlen) {
	*out = NULL;
	pthread_once(&loadOnce, load);
	if (loadErr) {
		snprintf(err, errlen, "%s", loadErr);
		return -1;
	}
	dfvk *c = calloc(1, sizeof *c);
	if (!c) {
		seterr(err, errlen, "out of memory", -1);
		return -1;
	}
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
	                         .pApplicationName = "deltafin",
	                         .apiVersion = VK_API_VERSION_1_0};
	VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkResult r = vkCreateInstance(&ici, NULL, &c->inst);
	if (r != VK_SUCCESS) {
		seterr(err, errlen, "vkCreateInstance", r);
		free(c);
		return r;
	}
	uint32_t n = 0;
	r = vkEnumeratePhysicalDevices(c->inst, &n, NULL);
	if (r != VK_SUCCESS || n == 0) {
		seterr(err, errlen, "no Vulkan physical device", r);
		dfvk_close(c);
		return r ? r : -1;
	}
	VkPhysicalDevice *devs = calloc(n, sizeof *devs);
	vkEnumeratePhysicalDevices(c->inst, &n, devs);
	int best = -1, bestRank = 1 << 30;
	uint32_t bestFamily = 0, bestTsBits = 0;
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(devs[i], &p);
		int rk = rank(prefer, nprefer, (int)p.deviceType);
		if (rk < 0 || rk >= bestRank) continue;
		uint32_t nf = 0;
		vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, NULL);
		VkQueueFamilyProperties fam[64];
		if (nf > 64) nf = 64;
		vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, fam);
		for (uint32_t f = 0; f < nf; f++) {
			if (fam[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
				best = (int)i, bestRank = rk, bestFamily = f, bestTsBits = fam[f].timestampValidBits;
				break;
			}
		}
	}
	if (best < 0) {
		free(devs);
		seterr(err, errlen, "no Vulkan device of the wanted type with a compute queue", -1);
		dfvk_close(c);
		return -1;
	}
	c->phys = devs[best];
	c->family = bestFamily;
	free(devs);

	VkPhysicalDeviceProperties p;
	vkGetPhysicalDeviceProperties(c->phys, &p);
	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "%s", p.deviceName);
	info->type = (int)p.deviceType;
	info->api = p.apiVersion;
	info->vendor = p.vendorID;
	info->maxBuffer = p.limits.maxStorageBufferRange;
	info->maxGroups = p.limits.maxComputeWorkGroupCount[0] < p.limits.maxComputeWorkGroupCount[1]
	                      ? p.limits.maxComputeWorkGroupCount[0]
	                      : p.limits.maxComputeWorkGroupCount[1];

	VkPhysicalDeviceMemoryProperties mp;
	vkGetPhysicalDeviceMemoryProperties(c->phys, &mp);
	const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	int mt = -1;
	for (uint32_t i = 0; i < mp.memoryTypeCount && mt < 0; i++)
		if ((mp.memoryTypes[i].propertyFlags & (want | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)) ==
		    (want | VK_MEMORY_PROPERTY_HOST_CACHED_BIT))
			mt = (int)i;
	for (uint32_t i = 0; i < mp.memoryTypeCount && mt < 0; i++)
		if ((mp.memoryTypes[i].propertyFlags & want) == want) mt = (int)i;
	if (mt < 0) {
		seterr(err, errlen, "no host-visible coherent memory type", -1);
		dfvk_close(c);
		return -1;
	}
	c->memType = (uint32_t)mt;
	// An integrated GPU shares the host's memory: a twin would be a copy
	// within RAM for nothing.
	c->twins = p.deviceType != VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU;
	for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
		if (!(mp.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
		c->localBits |= 1u << i;
		VkDeviceSize h = mp.memoryHeaps[mp.memoryTypes[i].heapIndex].size;
		if (h > info->localHeap) info->localHeap = h;
	}

	float prio = 1;
	VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
	                               .queueFamilyIndex = c->family,
	                               .queueCount = 1,
	                               .pQueuePriorities = &prio};
	VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qci};
	if ((r = vkCreateDevice(c->phys, &dci, NULL, &c->dev)) != VK_SUCCESS) {
		seterr(err, errlen, "vkCreateDevice", r);
		dfvk_close(c);
		return r;
	}
	vkGetDeviceQueue(c->dev, c->family, 0, &c->queue);

	VkDescriptorSetLayoutBinding b[DFVK_MAX_BINDINGS];
	for (int i = 0; i < DFVK_MAX_BINDINGS; i++)
		b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i + 1,
		                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		                                      .descriptorCount = 1,
		                                      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
	VkDescriptorSetLayoutCreateInfo sli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
	                                       .bindingCount = DFVK_MAX_BINDINGS,
	                                       .pBindings = b};
	if ((r = vkCreateDescriptorSetLayout(c->dev, &sli, NULL, &c->setLayout)) != VK_SUCCESS) {
		seterr(err, errlen, "vkCreateDescriptorSetLayout", r);
		dfvk_close(c);
		return r;
	}
	VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = DFVK_PUSH_BYTES};
	VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
	                                  .setLayoutCount = 1,
	                                  .pSetLayouts = &c->setLayout,
	                                  .pushConstantRangeCount = 1,
	                                  .pPushConstantRanges = &pcr};
	if ((r = vkCreatePipelineLayout(c->dev, &pli, NULL, &c->pipeLayout)) != VK_SUCCESS) {
		seterr(err, errlen, "vkCreatePipelineLayout", r);
		dfvk_close(c);
		return r;
	}
	c->pipes = calloc((size_t)nshaders, sizeof *c->pipes);
	c->mods = calloc((size_t)nshaders, sizeof *c->mods);
	c->npipes = nshaders;
	for (int i = 0; i < nshaders; i++) {
		VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = codeBytes[i], .pCode = code[i]};
		if ((r = vkCreateShaderModule(c->dev, &smi, NULL, &c->mods[i])) != VK_SUCCESS) {
			seterr(err, errlen, "vkCreateShaderModule", r);
			dfvk_close(c);
			return r;
		}
		VkComputePipelineCreateInfo cpi = {
		    .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		    .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
		              .stage = VK_SHADER_STAGE_COMPUTE_BIT,
		              .module = c->mods[i],
		              .pName = "main"},
		    .layout = c->pipeLayout};
		if ((r = vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &cpi, NULL, &c->pipes[i])) != VK_SUCCESS) {
			seterr(err, errlen, "vkCreateComputePipelines", r);
			dfvk_close(c);
			return r;
		}
	}
	VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = MAX_SETS * DFVK_MAX_BINDINGS};
	VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
	                                  .maxSets = MAX_SETS,
	                                  .poolSizeCount = 1,
	                                  .pPoolSizes = &ps};
	for (int f = 0; f < DFVK_FRAMES; f++) {
		if ((r = vkCreateDescriptorPool(c->dev, &dpi, NULL, &c->fr[f].pool)) != VK_SUCCESS) {
			seterr(err, errlen, "vkCreateDescriptorPool", r);
			dfvk_close(c);
			return r;
		}
	}
	VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
	                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
	                                .queueFamilyIndex = c->family};
	if ((r = vkCreateCommandPool(c->dev, &cpci, NULL, &c->cmdPool)) != VK_SUCCESS) {
		seterr(err, errlen, "vkCreateCommandPool", r);
		dfvk_close(c);
		return r;
	}
	VkCommandBufferAllocateInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
	                                   .commandPool = c->cmdPool,
	                                   .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
	                                   .commandBufferCount = 1};
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++) r = vkAllocateCommandBuffers(c->dev, &cbi, &c->fr[f].cmd);
	if (r != VK_SUCCESS || (r = vkAllocateCommandBuffers(c->dev, &cbi, &c->ucmd)) != VK_SUCCESS) {
		seterr(err, errlen, "vkAllocateCommandBuffers", r);
		dfvk_close(c);
		return r;
	}
	VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++) r = vkCreateFence(c->dev, &fci, NULL, &c->fr[f].fence);
	if (r != VK_SUCCESS || (r = vkCreateFence(c->dev, &fci, NULL, &c->fence)) != VK_SUCCESS) {
		seterr(err, errlen, "vkCreateFence", r);
		dfvk_close(c);
		return r;
	}
	// Timing is optional: a device without timestamps (or a pool it
	// refuses) runs every call untimed.
	if (bestTsBits > 0 && p.limits.timestampPeriod > 0) {
		VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		                             .queryType = VK_QUERY_TYPE_TIMESTAMP,
		                             .queryCount = DFVK_FRAMES * DFVK_QUERIES};
		if (vkCreateQueryPool(c->dev, &qpi, NULL, &c->qpool) != VK_SUCCESS) c->qpool = VK_NULL_HANDLE;
		c->tsPeriod = p.limits.timestampPeriod;
		c->tsMask = bestTsBits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bestTsBits) - 1);
	}
	*out = c;
	return 0;
}

static VkResult newBuffer(dfvk *c, slot *s, uint64_t bytes, VkBufferUsageFlags usage, uint32_t bits, int map);
static int settle(dfvk *c);

#define SLOT_USAGE (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

void *dfvk_slot(dfvk *c, int i, uint64_t bytes, int *res) {
	*res = 0;
	if (i < 0 || i >= DFVK_SLOTS) {
		*res = -1;
		return NULL;
	}
	slot *s = &c->slots[i], *d = &c->twin[i];
	if (bytes < 16) bytes = 16;
	bytes = (bytes + 255) & ~(uint64_t)255;
	if (s->buf && s->size >= bytes) return s->map;
	// A call still running may bind the buffers about to go.
	if ((*res = settle(c)) != VK_SUCCESS) return NULL;
	if (s->buf) {
		// Grow by at least half so that a run of slightly larger calls
		// does not reallocate every time.
		if (bytes < s->size + s->size / 2) bytes = (s->size + s->size / 2 + 255) & ~(uint64_t)255;
		vkDestroyBuffer(c->dev, s->buf, NULL);
		vkFreeMemory(c->dev, s->mem, NULL);
		memset(s, 0, sizeof *s);
	}
	if (d->buf) {
		vkDestroyBuffer(c->dev, d->buf, NULL);
		vkFreeMemory(c->dev, d->mem, NULL);
		memset(d, 0, sizeof *d);
	}
	VkResult r = newBuffer(c, s, bytes, SLOT_USAGE, 1u << c->memType, 1);
	if (r == VK_SUCCESS && c->twins) {
		r = newBuffer(c, d, bytes, SLOT_USAGE, c->localBits ? c->localBits : 1u << c->memType, 0);
		if (r != VK_SUCCESS) {
			vkDestroyBuffer(c->dev, s->buf, NULL);
			vkFreeMemory(c->dev, s->mem, NULL);
			memset(s, 0, sizeof *s);
		}
	}
	if (r != VK_SUCCESS) {
		*res = r;
		return NULL;
	}
	return s->map;
}

// stamp records the timestamp before an operation (when everything before
// it has finished: the calls' operations run one after another, ordered by
// barriers) and returns its pair's index, -1 when the call is not timed;
// unstamp records the one after it (copy: a copy's pair, not a shader's).
static int stamp(dfvk *c) {
	frame *f = &c->fr[c->cur];
	if (!c->qpool || f->qover) return -1;
	if (f->nq + 2 > DFVK_QUERIES) {
		f->qover = 1;
		return -1;
	}
	vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->qpool, (uint32_t)(c->cur * DFVK_QUERIES + f->nq));
	f->nq += 2;
	return f->nq / 2 - 1;
}

static void unstamp(dfvk *c, int q, int copy) {
	if (q < 0) return;
	frame *f = &c->fr[c->cur];
	vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->qpool, (uint32_t)(c->cur * DFVK_QUERIES + 2 * q + 1));
	f->qcopy[q] = (uint8_t)copy;
}

// barrier makes every transfer and shader write before it visible to every
// transfer and shader after it.
static void barrier(dfvk *c) {
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
	                                       VK_ACCESS_TRANSFER_WRITE_BIT};
	const VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	vkCmdPipelineBarrier(c->fr[c->cur].cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

// operands ends the copies of a call's operands, recorded before its first
// shader: the shaders after it (and any copy) wait for them. The copies
// themselves waited only for the host and the copies before them
// (dfvk_begin), not for the shaders of the call before, which may still
// be running: that is how one call's operands cross the bus while the
// call before computes.
static void operands(dfvk *c) {
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
	                                       VK_ACCESS_TRANSFER_WRITE_BIT};
	vkCmdPipelineBarrier(c->fr[c->cur].cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
	                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

int dfvk_copy(dfvk *c, int i, uint64_t bytes) {
	if (i < 0 || i >= DFVK_SLOTS || !c->slots[i].buf || bytes > c->slots[i].size) return -1;
	if (!c->twins || bytes == 0) return 0;
	// An operand copied in before the call's first shader needs nothing
	// more than dfvk_begin's barriers; a copy after a shader waits for
	// every shader and copy before it.
	int operand = !c->fr[c->cur].dispatched;
	if (!operand) barrier(c);
	VkBufferCopy cp = {.srcOffset = 0, .dstOffset = 0, .size = bytes};
	int q = stamp(c);
	vkCmdCopyBuffer(c->fr[c->cur].cmd, c->slots[i].buf, c->twin[i].buf, 1, &cp);
	unstamp(c, q, 1);
	if (operand) operands(c);
	else barrier(c);
	return 0;
}

int dfvk_begin(dfvk *c, int fi) {
	if (fi < 0 || fi >= DFVK_FRAMES) return -1;
	// The frame's last call must be over before its command buffer is
	// recorded again.
	VkResult r = dfvk_wait(c, fi);
	if (r != VK_SUCCESS) return r;
	frame *f = &c->fr[fi];
	c->cur = fi;
	if ((r = vkResetDescriptorPool(c->dev, f->pool, 0)) != VK_SUCCESS) return r;
	if ((r = vkResetCommandBuffer(f->cmd, 0)) != VK_SUCCESS) return r;
	VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	                               .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
	if ((r = vkBeginCommandBuffer(f->cmd, &bi)) != VK_SUCCESS) return r;
	f->nq = 0;
	f->qover = 0;
	f->dispatched = 0;
	if (c->qpool) vkCmdResetQueryPool(f->cmd, c->qpool, (uint32_t)(fi * DFVK_QUERIES), DFVK_QUERIES);
	// This call's shaders after everything before them: the host's writes
	// to the mapped slots, and the copies and shaders of the calls before
	// (the other frame's may still be running).
	VkMemoryBarrier all = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                       .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	                       .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
	vkCmdPipelineBarrier(f->cmd,
	                     VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
	                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &all, 0, NULL, 0, NULL);
	// Its copies only after the host's writes and the copies before: not
	// after the other frame's shaders, so that this call's operands cross
	// the bus while that call computes. Nothing the other call binds is
	// copied here (the host writes only slots no running call binds, see
	// vk.h), and this frame's own last call, whose slots these are, was
	// waited for above.
	VkMemoryBarrier cp = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
	vkCmdPipelineBarrier(f->cmd, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
	                     1, &cp, 0, NULL, 0, NULL);
	return 0;
}

// lookup returns the buffer the shaders bind for an id (a slot's twin, a
// slot's mapped memory itself for DFVK_OUT + slot, or a resident buffer),
// NULL if none.
static slot *lookup(dfvk *c, int id) {
	slot *s = NULL;
	if (id >= DFVK_OUT && id < DFVK_OUT + DFVK_SLOTS) s = &c->slots[id - DFVK_OUT];
	else if (id >= 0 && id < DFVK_SLOTS) s = c->twins ? &c->twin[id] : &c->slots[id];
	else if (id >= DFVK_SLOTS && id < DFVK_SLOTS + c->nres) s = &c->res[id - DFVK_SLOTS];
	return s && s->buf ? s : NULL;
}

int dfvk_dispatch(dfvk *c, int shader, const int *slots, int nslots, const void *push, int pushBytes, uint32_t gx,
                  uint32_t gy, uint32_t gz) {
	if (shader < 0 || shader >= c->npipes || nslots < 0 || nslots > DFVK_MAX_BINDINGS || pushBytes > DFVK_PUSH_BYTES)
		return -1;
	VkDescriptorSet set;
	VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
	                                  .descriptorPool = c->fr[c->cur].pool,
	                                  .descriptorSetCount = 1,
	                                  .pSetLayouts = &c->setLayout};
	VkResult r = vkAllocateDescriptorSets(c->dev, &ai, &set);
	if (r != VK_SUCCESS) return r;
	VkDescriptorBufferInfo bi[DFVK_MAX_BINDINGS];
	VkWriteDescriptorSet wr[DFVK_MAX_BINDINGS];
	for (int i = 0; i < nslots; i++) {
		slot *sl = lookup(c, slots[i]);
		if (!sl) return -1;
		bi[i] = (VkDescriptorBufferInfo){.buffer = sl->buf, .offset = 0, .range = VK_WHOLE_SIZE};
		wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
		                               .dstSet = set,
		                               .dstBinding = (uint32_t)i + 1,
		                               .descriptorCount = 1,
		                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		                               .pBufferInfo = &bi[i]};
	}
	vkUpdateDescriptorSets(c->dev, (uint32_t)nslots, wr, 0, NULL);
	VkCommandBuffer cmd = c->fr[c->cur].cmd;
	vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipes[shader]);
	vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, c->pipeLayout, 0, 1, &set, 0, NULL);
	if (pushBytes > 0) vkCmdPushConstants(cmd, c->pipeLayout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)pushBytes, push);
	int q = stamp(c);
	vkCmdDispatch(cmd, gx, gy, gz);
	unstamp(c, q, 0);
	c->fr[c->cur].dispatched = 1;
	// Each dispatch sees the writes of the ones before it.
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
	                     NULL);
	return 0;
}

int dfvk_submit(dfvk *c, int wait) {
	frame *f = &c->fr[c->cur];
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
	vkCmdPipelineBarrier(f->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
	                     1, &mb, 0, NULL, 0, NULL);
	VkResult r = vkEndCommandBuffer(f->cmd);
	if (r != VK_SUCCESS) return r;
	VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f->cmd};
	if ((r = vkQueueSubmit(c->queue, 1, &si, f->fence)) != VK_SUCCESS) return r;
	f->pending = 1;
	return wait ? dfvk_wait(c, c->cur) : 0;
}

int dfvk_wait(dfvk *c, int fi) {
	if (fi < 0 || fi >= DFVK_FRAMES) return -1;
	frame *f = &c->fr[fi];
	if (!f->pending) return 0;
	VkResult r = vkWaitForFences(c->dev, 1, &f->fence, VK_TRUE, UINT64_MAX);
	if (r != VK_SUCCESS) return r; // still pending: the device is lost or the wait failed
	f->pending = 0;
	vkResetFences(c->dev, 1, &f->fence);
	if (f->nq > 0 && !f->qover) {
		uint64_t ts[DFVK_QUERIES];
		if (vkGetQueryPoolResults(c->dev, c->qpool, (uint32_t)(fi * DFVK_QUERIES), (uint32_t)f->nq, sizeof ts, ts, sizeof ts[0],
		                          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
			for (int q = 0; q < f->nq / 2; q++) {
				uint64_t ns = (uint64_t)((double)((ts[2 * q + 1] - ts[2 * q]) & c->tsMask) * c->tsPeriod);
				if (f->qcopy[q]) c->copyNs += ns;
				else c->shaderNs += ns;
			}
		}
	}
	return 0;
}

// settle waits for every frame still running, before a buffer one of them
// may bind is freed or replaced.
static int settle(dfvk *c) {
	for (int f = 0; f < DFVK_FRAMES; f++) {
		int r = dfvk_wait(c, f);
		if (r != 0) return r;
	}
	return 0;
}

int dfvk_times(dfvk *c, uint64_t *shaderNs, uint64_t *copyNs) {
	*shaderNs = c->shaderNs;
	*copyNs = c->copyNs;
	return c->qpool != VK_NULL_HANDLE;
}

// newBuffer creates a buffer of bytes with usage in a memory type from bits
// (the first the buffer accepts), mapped when map is set.
static VkResult newBuffer(dfvk *c, slot *s, uint64_t bytes, VkBufferUsageFlags usage, uint32_t bits, int map) {
	memset(s, 0, sizeof *s);
	VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
	                          .size = bytes,
	                          .usage = usage,
	                          .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
	VkResult r = vkCreateBuffer(c->dev, &bci, NULL, &s->buf);
	if (r != VK_SUCCESS) {
		s->buf = VK_NULL_HANDLE;
		return r;
	}
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(c->dev, s->buf, &req);
	uint32_t ok = req.memoryTypeBits & bits;
	int mt = -1;
	for (int i = 0; i < 32 && mt < 0; i++)
		if (ok & (1u << i)) mt = i;
	r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	if (mt >= 0) {
		VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = req.size, .memoryTypeIndex = (uint32_t)mt};
		if ((r = vkAllocateMemory(c->dev, &mai, NULL, &s->mem)) == VK_SUCCESS &&
		    (r = vkBindBufferMemory(c->dev, s->buf, s->mem, 0)) == VK_SUCCESS &&
		    (!map || (r = vkMapMemory(c->dev, s->mem, 0, VK_WHOLE_SIZE, 0, &s->map)) == VK_SUCCESS)) {
			s->size = bytes;
			return VK_SUCCESS;
		}
	}
	vkDestroyBuffer(c->dev, s->buf, NULL);
	if (s->mem) vkFreeMemory(c->dev, s->mem, NULL);
	memset(s, 0, sizeof *s);
	return r;
}

#define STAGING_BYTES (64u << 20)

int dfvk_upload(dfvk *c, const void *data, uint64_t bytes, int *id) {
	*id = -1;
	if (!c->staging.buf) {
		VkResult r = newBuffer(c, &c->staging, STAGING_BYTES, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, 1u << c->memType, 1);
		if (r != VK_SUCCESS) return r;
	}
	int idx = -1;
	for (int i = 0; i < c->nres && idx < 0; i++)
		if (!c->res[i].buf) idx = i;
	if (idx < 0) {
		slot *grown = realloc(c->res, (size_t)(c->nres + 1) * sizeof *grown);
		if (!grown) return VK_ERROR_OUT_OF_HOST_MEMORY;
		c->res = grown;
		memset(&c->res[c->nres], 0, sizeof *grown);
		idx = c->nres++;
	}
	uint64_t size = (bytes < 16 ? 16 : bytes + 255) & ~(uint64_t)255;
	slot *s = &c->res[idx];
	// Device-local memory when there is any (a discrete GPU's own memory),
	// else the host-visible type the slots use.
	uint32_t bits = c->localBits ? c->localBits : 1u << c->memType;
	VkResult r = newBuffer(c, s, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, bits, 0);
	if (r != VK_SUCCESS) return r;
	for (uint64_t off = 0; off < bytes; off += STAGING_BYTES) {
		uint64_t n = bytes - off < STAGING_BYTES ? bytes - off : STAGING_BYTES;
		memcpy(c->staging.map, (const char *)data + off, n);
		VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		                               .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
		if ((r = vkResetCommandBuffer(c->ucmd, 0)) != VK_SUCCESS || (r = vkBeginCommandBuffer(c->ucmd, &bi)) != VK_SUCCESS)
			break;
		VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		                      .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT,
		                      .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT};
		vkCmdPipelineBarrier(c->ucmd, VK_PIPELINE_STAGE_HOST_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
		VkBufferCopy cp = {.srcOffset = 0, .dstOffset = off, .size = n};
		vkCmdCopyBuffer(c->ucmd, c->staging.buf, s->buf, 1, &cp);
		// The copy lands before any later shader reads the buffer.
		VkMemoryBarrier done = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		                        .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		                        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT};
		vkCmdPipelineBarrier(c->ucmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &done, 0, NULL, 0,
		                     NULL);
		if ((r = vkEndCommandBuffer(c->ucmd)) != VK_SUCCESS) break;
		VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->ucmd};
		if ((r = vkQueueSubmit(c->queue, 1, &si, c->fence)) != VK_SUCCESS) break;
		r = vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
		vkResetFences(c->dev, 1, &c->fence);
		if (r != VK_SUCCESS) break;
	}
	if (r != VK_SUCCESS) {
		dfvk_free(c, DFVK_SLOTS + idx);
		return r;
	}
	*id = DFVK_SLOTS + idx;
	return 0;
}

void dfvk_free(dfvk *c, int id) {
	if (id < DFVK_SLOTS || id >= DFVK_SLOTS + c->nres) return;
	// A call still running may bind it; a failed wait (a lost device) is
	// as good as over.
	settle(c);
	slot *s = &c->res[id - DFVK_SLOTS];
	if (s->buf) vkDestroyBuffer(c->dev, s->buf, NULL);
	if (s->mem) vkFreeMemory(c->dev, s->mem, NULL);
	memset(s, 0, sizeof *s);
}

int dfvk_probe(void) {
	pthread_once(&loadOnce, load);
	if (loadErr) return -1;
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "deltafin", .apiVersion = VK_API_VERSION_1_0};
	VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkInstance inst;
	if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS) return -1;
	uint32_t n = 0;
	int found = 0;
	if (vkEnumeratePhysicalDevices(inst, &n, NULL) == VK_SUCCESS && n > 0) {
		VkPhysicalDevice *devs = calloc(n, sizeof *devs);
		if (devs && vkEnumeratePhysicalDevices(inst, &n, devs) >= 0) {
			for (uint32_t i = 0; i < n; i++) {
				VkPhysicalDeviceProperties p;
				vkGetPhysicalDeviceProperties(devs[i], &p);
				found |= 1 << (int)p.deviceType;
			}
		}
		free(devs);
	}
	vkDestroyInstance(inst, NULL);
	return found;
}
