// The loader, and opening and closing a device with its queues, pipelines,
// command buffers and query pool; the calls are vk.c's.
#include "vkint.h"

#include <dlfcn.h>

#define DFVK_DEFINE(n) __attribute__((visibility("hidden"))) PFN_##n n;
DFVK_FUNCS(DFVK_DEFINE)

static pthread_once_t loadOnce = PTHREAD_ONCE_INIT;
// Optional (a Vulkan 1.2 loader's): the host's query resets, where the
// device is 1.2 too.
__attribute__((visibility("hidden"))) PFN_vkResetQueryPool dfvkResetQueryPool;
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
	dfvkResetQueryPool = (PFN_vkResetQueryPool)dlsym(h, "vkResetQueryPool");
}

const char *dfvk_load(void) {
	pthread_once(&loadOnce, load);
	return loadErr;
}

void dfvk_seterr(char *err, int len, const char *what, int res) { snprintf(err, len, "%s (VkResult %d)", what, res); }

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
			if (c->fr[f].copied) vkDestroySemaphore(c->dev, c->fr[f].copied, NULL);
			if (c->fr[f].computed) vkDestroySemaphore(c->dev, c->fr[f].computed, NULL);
			if (c->fr[f].pool) vkDestroyDescriptorPool(c->dev, c->fr[f].pool, NULL);
		}
		if (c->qpool) vkDestroyQueryPool(c->dev, c->qpool, NULL);
		if (c->cmdPool) vkDestroyCommandPool(c->dev, c->cmdPool, NULL);
		if (c->xcmdPool) vkDestroyCommandPool(c->dev, c->xcmdPool, NULL);
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

// families lists the first 64 queue families of d into fam and returns
// how many it listed.
static uint32_t families(VkPhysicalDevice d, VkQueueFamilyProperties *fam) {
	uint32_t n = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(d, &n, NULL);
	if (n > 64) n = 64;
	vkGetPhysicalDeviceQueueFamilyProperties(d, &n, fam);
	return n;
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
	const char *loadErr = dfvk_load();
	if (loadErr) {
		snprintf(err, errlen, "%s", loadErr);
		return -1;
	}
	dfvk *c = calloc(1, sizeof *c);
	if (!c) {
		dfvk_seterr(err, errlen, "out of memory", -1);
		return -1;
	}
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
	                         .pApplicationName = "deltafin",
	                         .apiVersion = dfvkResetQueryPool ? VK_API_VERSION_1_2 : VK_API_VERSION_1_0};
	VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkResult r = vkCreateInstance(&ici, NULL, &c->inst);
	if (r != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "vkCreateInstance", r);
		free(c);
		return r;
	}
	uint32_t n = 0;
	r = vkEnumeratePhysicalDevices(c->inst, &n, NULL);
	if (r != VK_SUCCESS || n == 0) {
		dfvk_seterr(err, errlen, "no Vulkan physical device", r);
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
		VkQueueFamilyProperties fam[64];
		uint32_t nf = families(devs[i], fam);
		for (uint32_t f = 0; f < nf; f++) {
			if (fam[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
				best = (int)i, bestRank = rk, bestFamily = f, bestTsBits = fam[f].timestampValidBits;
				break;
			}
		}
	}
	if (best < 0) {
		free(devs);
		dfvk_seterr(err, errlen, "no Vulkan device of the wanted type with a compute queue", -1);
		dfvk_close(c);
		return -1;
	}
	c->phys = devs[best];
	c->family = bestFamily;
	free(devs);
	// The operands' copies go to a transfer-only family where there is one:
	// its queue runs on the GPU's copy engines, beside the shaders; copies
	// recorded on the compute queue ran one after another with them (on the
	// H100, 4.0 ms of copies and 2.2 of shaders in a 7.9 ms call, by the
	// device's clock: kernels/README.md). Elsewhere (lavapipe: one family)
	// the same two submissions go to the compute queue.
	c->xfamily = c->family;
	uint32_t xTsBits = bestTsBits;
	VkQueueFamilyProperties fam[64];
	uint32_t nf = families(c->phys, fam);
	for (uint32_t f = 0; f < nf && !c->xdedicated; f++) {
		VkQueueFlags fl = fam[f].queueFlags;
		if ((fl & VK_QUEUE_TRANSFER_BIT) && !(fl & (VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT)) && fam[f].queueCount > 0)
			c->xfamily = f, c->xdedicated = 1, xTsBits = fam[f].timestampValidBits;
	}
	// The copies back that end a call take the family's second queue where
	// it has one (NVIDIA's has two), so that they cross beside the next
	// call's shaders and operands; else the shaders' queue, after them.
	c->bown = c->xdedicated && fam[c->xfamily].queueCount >= 2;

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
		dfvk_seterr(err, errlen, "no host-visible coherent memory type", -1);
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

	info->transferQueue = c->xdedicated;
	info->backQueue = c->bown;
	float prio[2] = {1, 1};
	VkDeviceQueueCreateInfo qci[2] = {{.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
	                                   .queueFamilyIndex = c->family,
	                                   .queueCount = 1,
	                                   .pQueuePriorities = prio},
	                                  {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
	                                   .queueFamilyIndex = c->xfamily,
	                                   .queueCount = c->bown ? 2 : 1,
	                                   .pQueuePriorities = prio}};
	// Vulkan 1.2 devices reset queries from the host (hostQueryReset, a
	// feature every 1.2 device has): no reset command on the queue.
	VkPhysicalDeviceHostQueryResetFeatures hqr = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES,
	                                              .hostQueryReset = VK_TRUE};
	c->hostReset = c->canHostReset = dfvkResetQueryPool && p.apiVersion >= VK_API_VERSION_1_2;
	VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
	                          .pNext = c->hostReset ? &hqr : NULL,
	                          .queueCreateInfoCount = c->xdedicated ? 2 : 1,
	                          .pQueueCreateInfos = qci};
	if ((r = vkCreateDevice(c->phys, &dci, NULL, &c->dev)) != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "vkCreateDevice", r);
		dfvk_close(c);
		return r;
	}
	vkGetDeviceQueue(c->dev, c->family, 0, &c->queue);
	c->xqueue = c->queue;
	if (c->xdedicated) vkGetDeviceQueue(c->dev, c->xfamily, 0, &c->xqueue);
	c->bqueue = c->queue;
	if (c->bown) vkGetDeviceQueue(c->dev, c->xfamily, 1, &c->bqueue);

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
		dfvk_seterr(err, errlen, "vkCreateDescriptorSetLayout", r);
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
		dfvk_seterr(err, errlen, "vkCreatePipelineLayout", r);
		dfvk_close(c);
		return r;
	}
	c->pipes = calloc((size_t)nshaders, sizeof *c->pipes);
	c->mods = calloc((size_t)nshaders, sizeof *c->mods);
	c->npipes = nshaders;
	for (int i = 0; i < nshaders; i++) {
		VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = codeBytes[i], .pCode = code[i]};
		if ((r = vkCreateShaderModule(c->dev, &smi, NULL, &c->mods[i])) != VK_SUCCESS) {
			dfvk_seterr(err, errlen, "vkCreateShaderModule", r);
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
			dfvk_seterr(err, errlen, "vkCreateComputePipelines", r);
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
			dfvk_seterr(err, errlen, "vkCreateDescriptorPool", r);
			dfvk_close(c);
			return r;
		}
	}
	VkCommandPoolCreateInfo cpci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
	                                .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
	                                .queueFamilyIndex = c->family};
	if ((r = vkCreateCommandPool(c->dev, &cpci, NULL, &c->cmdPool)) != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "vkCreateCommandPool", r);
		dfvk_close(c);
		return r;
	}
	VkCommandBufferAllocateInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
	                                   .commandPool = c->cmdPool,
	                                   .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
	                                   .commandBufferCount = 1};
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++) r = vkAllocateCommandBuffers(c->dev, &cbi, &c->fr[f].cmd);
	if (r == VK_SUCCESS) r = vkAllocateCommandBuffers(c->dev, &cbi, &c->ucmd);
	if (r == VK_SUCCESS && c->xdedicated) {
		cpci.queueFamilyIndex = c->xfamily;
		r = vkCreateCommandPool(c->dev, &cpci, NULL, &c->xcmdPool);
	}
	cbi.commandPool = c->xdedicated ? c->xcmdPool : c->cmdPool;
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++) r = vkAllocateCommandBuffers(c->dev, &cbi, &c->fr[f].xcmd);
	cbi.commandPool = c->bown ? c->xcmdPool : c->cmdPool;
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++) r = vkAllocateCommandBuffers(c->dev, &cbi, &c->fr[f].bcmd);
	if (r != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "vkAllocateCommandBuffers", r);
		dfvk_close(c);
		return r;
	}
	VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
	for (int f = 0; f < DFVK_FRAMES && r == VK_SUCCESS; f++)
		if ((r = vkCreateFence(c->dev, &fci, NULL, &c->fr[f].fence)) == VK_SUCCESS &&
		    (r = vkCreateSemaphore(c->dev, &sci, NULL, &c->fr[f].copied)) == VK_SUCCESS)
			r = vkCreateSemaphore(c->dev, &sci, NULL, &c->fr[f].computed);
	if (r != VK_SUCCESS || (r = vkCreateFence(c->dev, &fci, NULL, &c->fence)) != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "vkCreateFence", r);
		dfvk_close(c);
		return r;
	}
	// Timing is optional: a device without timestamps (or a pool it
	// refuses) runs every call untimed; one whose transfer queue has none
	// times only the shaders.
	if (bestTsBits > 0 && p.limits.timestampPeriod > 0) {
		VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		                             .queryType = VK_QUERY_TYPE_TIMESTAMP,
		                             .queryCount = xbase(DFVK_FRAMES, 0)};
		if (vkCreateQueryPool(c->dev, &qpi, NULL, &c->qpool) != VK_SUCCESS) c->qpool = VK_NULL_HANDLE;
		c->tsPeriod = p.limits.timestampPeriod;
		c->tsMask = bestTsBits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bestTsBits) - 1);
		c->xtimed = xTsBits > 0;
		c->xtsMask = xTsBits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << xTsBits) - 1);
		c->btimed = c->bown ? c->xtimed : 1;
		c->btsMask = c->bown ? c->xtsMask : c->tsMask;
	}
	// Every query starts reset: the calls reset them from then on (a copy
	// range for the frame's next call, dfvk_begin).
	if (c->qpool && (r = dfvk_reset_queries(c)) != VK_SUCCESS) {
		dfvk_seterr(err, errlen, "resetting the timestamps", r);
		dfvk_close(c);
		return r;
	}
	c->timing = 1;
	*out = c;
	return 0;
}

int dfvk_probe(void) {
	if (dfvk_load()) return -1;
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
