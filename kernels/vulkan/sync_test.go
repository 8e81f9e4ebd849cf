//go:build linux && cgo

package vulkan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// validationLayer is Debian's manifest of Khronos' validation layer
// (vulkan-validationlayers; make deps installs it).
const validationLayer = "/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json"

// TestCallsPassSyncValidation runs the pipelined products and groups of
// experts, the device clock's calls, an attention, a resident expert, a
// resident product in pieces and products over one input once more, in a
// child process, under Khronos' validation layer with its
// synchronization checks, and fails on anything the layer reports. The
// semaphores and barriers are what lets one call's operands cross the bus
// (on a queue of their own) while the call before computes (vk.c): too few
// of them give wrong results only on a GPU that overlaps the two, which
// lavapipe never does, so the layer is what holds them to the rules here.
// Checked: without the barrier after each dispatch it reports
// read-after-write hazards (36 here); with the shaders' submission not
// waiting for the copies' semaphore, a semaphore signalled twice; without
// dfvk_timing's reset when the timestamps are turned back on, a query
// stamped unreset (TestSpansFollowTheSemaphores). Debian's
// layer (1.3.239) did not report a shader reading a copy's write with no
// barrier between, when both were on one queue (before the copies had a
// submission of their own).
func TestCallsPassSyncValidation(t *testing.T) {
	device(t) // lavapipe is there
	if _, err := os.Stat(validationLayer); err != nil {
		t.Fatalf("no Vulkan validation layer (make deps installs vulkan-validationlayers): %v", err)
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "validation.txt")
	settings := filepath.Join(dir, "vk_layer_settings.txt")
	require.NoError(t, os.WriteFile(settings, []byte(strings.Join([]string{
		"khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT",
		"khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG",
		"khronos_validation.report_flags = error,warn,info",
		"khronos_validation.log_filename = " + logFile,
	}, "\n")+"\n"), 0o644))
	run := "^(TestPipelinedIsOnePiece|TestDeviceTimes|TestAttentionConformance|TestResidentExpertFFN|TestResidentProductInPiecesIsTheWholeCall|TestMatMulSharedIsEachProduct|TestSpansFollowTheSemaphores)$"
	cmd := exec.Command(os.Args[0], "-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation", "VK_LAYER_SETTINGS_PATH="+settings)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the tests under the validation layer:\n%s", out)
	for _, name := range []string{"TestPipelinedIsOnePiece", "TestDeviceTimes", "TestAttentionConformance", "TestResidentExpertFFN",
		"TestResidentProductInPiecesIsTheWholeCall", "TestMatMulSharedIsEachProduct", "TestSpansFollowTheSemaphores"} {
		require.Contains(t, string(out), "--- PASS: "+name, "%s ran", name)
	}
	raw, err := os.ReadFile(logFile)
	require.NoError(t, err, "the layer wrote no log")
	log := string(raw)
	require.Contains(t, log, "Khronos Validation Layer Active", "the layer was loaded")
	require.Contains(t, log, "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION", "with its synchronization checks")
	var reported []string
	for _, line := range strings.Split(log, "\n") {
		// A message's first line names its id and severity: INFO lines
		// are the layer's own status (which file, which checks, its cache).
		if line != "" && !strings.HasPrefix(line, " ") && !strings.Contains(line, "(INFO / ") {
			reported = append(reported, line)
		}
	}
	require.Empty(t, reported, "the validation layer reported:\n%s", log)
}
