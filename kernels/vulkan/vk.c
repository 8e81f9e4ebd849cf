// Slots, calls and resident buffers of an opened device (vkopen.c opens
// it).
#include "vkint.h"

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
	VkResult r = dfvk_new_buffer(c, s, bytes, SLOT_USAGE, 1u << c->memType, 1, 1);
	if (r == VK_SUCCESS && c->twins) {
		r = dfvk_new_buffer(c, d, bytes, SLOT_USAGE, c->localBits ? c->localBits : 1u << c->memType, 0, 1);
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

// stamp records in cmd the timestamp before an operation, at query base +
// *n (a frame's shader range, or its copy range), and returns its pair's
// index; -1 when the call is not timed, or once it has more than limit
// stamps (*over is then set). unstamp records the one after it. A stamp is
// written when everything before it on its queue is over: a shader's pair
// spans its run; a copy's, its run on the copies' queue (after the copies
// before it), whether or not shaders run beside it.
static int stamp(dfvk *c, VkCommandBuffer cmd, uint32_t base, int *n, int *over, int limit) {
	if (!c->fr[c->cur].timed || *over) return -1;
	if (*n + 2 > limit) {
		*over = 1;
		return -1;
	}
	vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->qpool, base + (uint32_t)*n);
	*n += 2;
	return *n / 2 - 1;
}

static void unstamp(dfvk *c, VkCommandBuffer cmd, uint32_t base, int q) {
	if (q >= 0) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->qpool, base + (uint32_t)(2 * q + 1));
}

int dfvk_copy(dfvk *c, int i, uint64_t bytes) {
	if (i < 0 || i >= DFVK_SLOTS || !c->slots[i].buf || bytes > c->slots[i].size) return -1;
	frame *f = &c->fr[c->cur];
	if (f->dispatched) return -1; // an operand's copy precedes the call's shaders
	if (!c->twins || bytes == 0) return 0;
	VkBufferCopy cp = {.srcOffset = 0, .dstOffset = 0, .size = bytes};
	uint32_t base = xbase(c->cur, f->parity);
	int q = c->xtimed ? stamp(c, f->xcmd, base, &f->nx, &f->xover, DFVK_XQUERIES - 2) : -1;
	vkCmdCopyBuffer(f->xcmd, c->slots[i].buf, c->twin[i].buf, 1, &cp);
	unstamp(c, f->xcmd, base, q);
	f->copies++;
	return 0;
}

int dfvk_back(dfvk *c, int i, uint64_t bytes) {
	if (i < 0 || i >= DFVK_SLOTS || !c->slots[i].buf || bytes > c->slots[i].size) return -1;
	frame *f = &c->fr[c->cur];
	if (!c->twins || bytes == 0) return 0;
	if (f->nlazy == DFVK_BACKS) return -1;
	// Recorded at submit, on bcmd.
	f->lazy[f->nlazy] = i;
	f->lazyBytes[f->nlazy++] = bytes;
	return 0;
}

// backAfter records frame f's copies back still pending on bcmd, which
// runs once the call's shaders are over (the semaphore computed carries
// their writes), stamped in the frame's copy range after its operands'
// copies; then makes them visible to the host.
static void backAfter(dfvk *c, frame *f) {
	uint32_t base = xbase(c->cur, f->parity);
	for (int k = 0; k < f->nlazy; k++) {
		int i = f->lazy[k];
		VkBufferCopy cp = {.srcOffset = 0, .dstOffset = 0, .size = f->lazyBytes[k]};
		int q = c->btimed ? stamp(c, f->bcmd, base, &f->nx, &f->xover, DFVK_XQUERIES - 2) : -1;
		vkCmdCopyBuffer(f->bcmd, c->twin[i].buf, c->slots[i].buf, 1, &cp);
		unstamp(c, f->bcmd, base, q);
	}
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
	vkCmdPipelineBarrier(f->bcmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

int dfvk_begin(dfvk *c, int fi) {
	if (fi < 0 || fi >= DFVK_FRAMES) return -1;
	// The frame's last call must be over before its command buffers are
	// recorded again.
	VkResult r = dfvk_wait(c, fi);
	if (r != VK_SUCCESS) return r;
	frame *f = &c->fr[fi];
	c->cur = fi;
	if ((r = vkResetDescriptorPool(c->dev, f->pool, 0)) != VK_SUCCESS) return r;
	if ((r = vkResetCommandBuffer(f->cmd, 0)) != VK_SUCCESS) return r;
	if ((r = vkResetCommandBuffer(f->xcmd, 0)) != VK_SUCCESS) return r;
	if ((r = vkResetCommandBuffer(f->bcmd, 0)) != VK_SUCCESS) return r;
	VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	                               .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
	if ((r = vkBeginCommandBuffer(f->cmd, &bi)) != VK_SUCCESS) return r;
	if ((r = vkBeginCommandBuffer(f->xcmd, &bi)) != VK_SUCCESS) {
		vkEndCommandBuffer(f->cmd);
		return r;
	}
	if ((r = vkBeginCommandBuffer(f->bcmd, &bi)) != VK_SUCCESS) {
		vkEndCommandBuffer(f->cmd);
		vkEndCommandBuffer(f->xcmd);
		return r;
	}
	f->nq = f->nx = f->xb0 = 0;
	f->qover = f->xover = 0;
	f->copies = f->dispatched = f->nlazy = 0;
	f->parity ^= 1;
	f->timed = c->qpool && c->timing;
	if (f->timed) {
		// The moment the compute queue takes the call up (after its wait
		// for the copies in), before the resets and the barrier below: in
		// the copy range's last query, which no copy stamps.
		vkCmdWriteTimestamp(f->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c->qpool, startQuery(fi, f->parity));
	}
	if (f->timed && !c->hostReset) {
		// This call's shader range, and the copy range the frame's next
		// call stamps (this one's was reset by the call before it, or at
		// open; the host has read what the call before stamped there).
		// A Vulkan 1.2 device has the host reset them instead, once read
		// (dfvk_wait): two commands fewer at the head of every call.
		vkCmdResetQueryPool(f->cmd, c->qpool, (uint32_t)(fi * DFVK_QUERIES), DFVK_QUERIES);
		vkCmdResetQueryPool(f->cmd, c->qpool, xbase(fi, f->parity ^ 1), DFVK_XQUERIES);
	}
	// The call's shaders after everything before them on the compute queue:
	// the shaders of the calls before (the other frame's may still be
	// running). Its copies need no barrier: they are a submission of their
	// own, which the shaders wait for (dfvk_submit); the host's writes to
	// the mapped slots are visible to both once submitted; and they wait for
	// no shader, so one call's operands cross the bus while the call before
	// computes. Nothing a running call binds is copied (the host writes only
	// slots no running call binds, see vk.h), and this frame's last call,
	// whose slots these are, was waited for above.
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
	                      .srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
	                      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
	vkCmdPipelineBarrier(f->cmd,
	                     VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
	                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	return 0;
}

// lookup returns the buffer the shaders bind for an id (a slot's twin, or
// a resident buffer), NULL if none.
static slot *lookup(dfvk *c, int id) {
	slot *s = NULL;
	if (id >= 0 && id < DFVK_SLOTS) s = c->twins ? &c->twin[id] : &c->slots[id];
	else if (id >= DFVK_SLOTS && id < DFVK_SLOTS + c->nres) s = &c->res[id - DFVK_SLOTS];
	return s && s->buf ? s : NULL;
}

int dfvk_dispatch(dfvk *c, int shader, const int *slots, int nslots, const void *push, int pushBytes, uint32_t gx,
                  uint32_t gy, uint32_t gz) {
	if (shader < 0 || shader >= c->npipes || nslots < 0 || nslots > DFVK_MAX_BINDINGS || pushBytes > DFVK_PUSH_BYTES)
		return -1;
	if (c->fr[c->cur].nlazy > 0) return -1; // the copies back end a call
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
	frame *f = &c->fr[c->cur];
	uint32_t base = (uint32_t)(c->cur * DFVK_QUERIES);
	int q = stamp(c, cmd, base, &f->nq, &f->qover, DFVK_QUERIES);
	vkCmdDispatch(cmd, gx, gy, gz);
	unstamp(c, cmd, base, q);
	f->dispatched = 1;
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
	// What the shaders wrote, to the host, where there are no twins (the
	// results are the slots themselves). With twins the host reads only
	// what the copies back bring, made visible by their own barrier on
	// bcmd, so the compute queue ends the call without one (a barrier to
	// the host stage may flush the GPU's caches; with the host's resets,
	// 0.277–0.281 of an H100's peak against 0.269–0.270 for a resident
	// product at 256 positions: kernels/README.md, "Issue 33, fourteenth
	// session").
	if (!c->twins) {
		VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		                      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
		                      .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
		vkCmdPipelineBarrier(f->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
		                     0, 1, &mb, 0, NULL, 0, NULL);
	}
	int backs = f->nlazy > 0;
	f->xb0 = f->nx; // the operands' copies' stamps end here
	if (backs) backAfter(c, f);
	VkResult r = vkEndCommandBuffer(f->xcmd);
	VkResult rb = vkEndCommandBuffer(f->bcmd);
	if (r == VK_SUCCESS) r = rb;
	if (r != VK_SUCCESS) {
		vkEndCommandBuffer(f->cmd);
		return r;
	}
	if ((r = vkEndCommandBuffer(f->cmd)) != VK_SUCCESS) return r;
	// The copies first, on the transfer queue, signalling copied; the
	// shaders wait for it with every stage (their timestamps too, so that
	// the shaders' time is theirs), and its signal makes the copies' writes
	// visible to them. The copies back, if any, wait for the shaders in
	// turn (computed carries their writes). The fence on the last
	// submission covers them all.
	VkPipelineStageFlags waitAt = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &f->cmd};
	if (f->copies > 0) {
		VkSubmitInfo xi = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		                   .commandBufferCount = 1,
		                   .pCommandBuffers = &f->xcmd,
		                   .signalSemaphoreCount = 1,
		                   .pSignalSemaphores = &f->copied};
		if ((r = vkQueueSubmit(c->xqueue, 1, &xi, VK_NULL_HANDLE)) != VK_SUCCESS) return r;
		si.waitSemaphoreCount = 1;
		si.pWaitSemaphores = &f->copied;
		si.pWaitDstStageMask = &waitAt;
	}
	if (backs) {
		si.signalSemaphoreCount = 1;
		si.pSignalSemaphores = &f->computed;
	}
	// A failure here leaves a semaphore signalled with no waiter: the
	// device is lost or out of memory, and every later call fails too.
	if ((r = vkQueueSubmit(c->queue, 1, &si, backs ? VK_NULL_HANDLE : f->fence)) != VK_SUCCESS) return r;
	if (backs) {
		VkSubmitInfo bi = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		                   .waitSemaphoreCount = 1,
		                   .pWaitSemaphores = &f->computed,
		                   .pWaitDstStageMask = &waitAt,
		                   .commandBufferCount = 1,
		                   .pCommandBuffers = &f->bcmd};
		if ((r = vkQueueSubmit(c->bqueue, 1, &bi, f->fence)) != VK_SUCCESS) return r;
	}
	f->pending = 1;
	return wait ? dfvk_wait(c, c->cur) : 0;
}

// sumTimes adds the n timestamps from query first on (pairs: before,
// after) to *ns, and where span is set puts the first and the last in
// span[0] and span[1] (nanoseconds on the device's clock).
static void sumTimes(dfvk *c, uint32_t first, int n, uint64_t mask, uint64_t *ns, uint64_t *span) {
	uint64_t ts[DFVK_QUERIES];
	if (n <= 0 || vkGetQueryPoolResults(c->dev, c->qpool, first, (uint32_t)n, sizeof ts, ts, sizeof ts[0],
	                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
		return;
	for (int q = 0; q < n / 2; q++) *ns += (uint64_t)((double)((ts[2 * q + 1] - ts[2 * q]) & mask) * c->tsPeriod);
	if (span) {
		span[0] = (uint64_t)((double)(ts[0] & mask) * c->tsPeriod);
		span[1] = (uint64_t)((double)(ts[n - 1] & mask) * c->tsPeriod);
	}
}

int dfvk_wait(dfvk *c, int fi) {
	if (fi < 0 || fi >= DFVK_FRAMES) return -1;
	frame *f = &c->fr[fi];
	if (!f->pending) return 0;
	VkResult r = vkWaitForFences(c->dev, 1, &f->fence, VK_TRUE, UINT64_MAX);
	if (r != VK_SUCCESS) return r; // still pending: the device is lost or the wait failed
	f->pending = 0;
	vkResetFences(c->dev, 1, &f->fence);
	if (f->timed && !f->qover && !f->xover) {
		// The shaders, the operands' copies, the copies back (xb0 on).
		dfvk_span sp = {0};
		int keep = c->tracing && c->nspans < DFVK_SPANS;
		uint64_t start;
		if (keep && vkGetQueryPoolResults(c->dev, c->qpool, startQuery(fi, f->parity), 1, sizeof start, &start, sizeof start,
		                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS)
			sp.start = (uint64_t)((double)(start & c->tsMask) * c->tsPeriod);
		sumTimes(c, (uint32_t)(fi * DFVK_QUERIES), f->nq, c->tsMask, &c->shaderNs, keep ? sp.sh : NULL);
		sumTimes(c, xbase(fi, f->parity), f->xb0, c->xtsMask, &c->copyNs, keep ? sp.in : NULL);
		sumTimes(c, xbase(fi, f->parity) + (uint32_t)f->xb0, f->nx - f->xb0, c->btsMask, &c->copyNs, keep ? sp.back : NULL);
		if (keep) c->spans[c->nspans++] = sp;
	}
	if (f->timed && c->hostReset) {
		// Read, so reset for the frame's next calls (dfvk_begin).
		dfvkResetQueryPool(c->dev, c->qpool, (uint32_t)(fi * DFVK_QUERIES), DFVK_QUERIES);
		dfvkResetQueryPool(c->dev, c->qpool, xbase(fi, f->parity), DFVK_XQUERIES);
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

void dfvk_trace(dfvk *c, int on) {
	c->tracing = on;
	c->nspans = 0;
}

VkResult dfvk_reset_queries(dfvk *c) {
	VkResult r = settle(c);
	if (r != VK_SUCCESS) return r;
	VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	                               .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
	VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &c->ucmd};
	r = vkResetCommandBuffer(c->ucmd, 0);
	if (r == VK_SUCCESS && (r = vkBeginCommandBuffer(c->ucmd, &bi)) == VK_SUCCESS) {
		vkCmdResetQueryPool(c->ucmd, c->qpool, 0, xbase(DFVK_FRAMES, 0));
		if ((r = vkEndCommandBuffer(c->ucmd)) == VK_SUCCESS && (r = vkQueueSubmit(c->queue, 1, &si, c->fence)) == VK_SUCCESS) {
			r = vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
			vkResetFences(c->dev, 1, &c->fence);
		}
	}
	return r;
}

int dfvk_host_resets(dfvk *c, int on) {
	if (!c->qpool || (on && !c->canHostReset)) return -1;
	// The queue's resets prepare the frame's next copy range a call ahead;
	// the host's, none: every query starts reset again, once no call runs.
	int r = dfvk_reset_queries(c);
	if (r == VK_SUCCESS) c->hostReset = on;
	return r;
}

int dfvk_timing(dfvk *c, int on) {
	if (!c->qpool) return on ? -1 : 0;
	if (!on == !c->timing) return 0;
	// The untimed calls reset no copy range for the frames' next ones:
	// every query starts reset again, once no call runs.
	int r = on ? dfvk_reset_queries(c) : settle(c);
	if (r == VK_SUCCESS) c->timing = on;
	return r;
}

int dfvk_spans(dfvk *c, dfvk_span *out, int max) {
	int n = c->nspans < max ? c->nspans : max;
	memcpy(out, c->spans, (size_t)n * sizeof *out);
	c->nspans = 0;
	return n;
}

int dfvk_times(dfvk *c, uint64_t *shaderNs, uint64_t *copyNs) {
	*shaderNs = c->shaderNs;
	*copyNs = c->copyNs;
	return c->qpool != VK_NULL_HANDLE;
}

VkResult dfvk_new_buffer(dfvk *c, slot *s, uint64_t bytes, VkBufferUsageFlags usage, uint32_t bits, int map, int shared) {
	memset(s, 0, sizeof *s);
	uint32_t fams[2] = {c->family, c->xfamily};
	VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
	                          .size = bytes,
	                          .usage = usage,
	                          .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
	if (shared && c->xdedicated) {
		// A slot and its twin are the copies' (transfer queue) and the
		// shaders' (compute queue): concurrent sharing spares the ownership
		// transfers an exclusive buffer would need between them.
		bci.sharingMode = VK_SHARING_MODE_CONCURRENT;
		bci.queueFamilyIndexCount = 2;
		bci.pQueueFamilyIndices = fams;
	}
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
		VkResult r = dfvk_new_buffer(c, &c->staging, STAGING_BYTES, VK_BUFFER_USAGE_TRANSFER_SRC_BIT, 1u << c->memType, 1, 0);
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
	VkResult r = dfvk_new_buffer(c, s, size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT, bits, 0, 0);
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

