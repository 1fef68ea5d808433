// The NCCL / PyTorch distributed error catalogue (see nccl_errors.hpp). Meanings from NCCL's ncclResult_t comments
// (src/nccl.h.in), its troubleshooting guide, and the maintainers' answers on the threads the triage corpus cites
// (tests/data/triage/).
#include "topo/nccl_errors.hpp"

#include "topo/log_framing.hpp"

#include <algorithm>
#include <bitset>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace gsq::topo {

namespace {

bool has_ci(std::string_view s, std::string_view w) {
  return std::search(s.begin(), s.end(), w.begin(), w.end(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         }) != s.end();
}

// The digits after `key` in s, as text ("" when none).
std::string number_after(std::string_view s, std::string_view key) {
  const size_t at = s.find(key);
  if (at == std::string_view::npos) return {};
  size_t i = at + key.size(), j = i;
  if (j < s.size() && s[j] == '-') ++j;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  return std::string(s.substr(i, j - i));
}

// The catalogue's needles for match_errors(), which reads a line in one pass instead of a search per needle, looking at
// every step-th position only (Wu and Manber's sampling): every needle is at least `shortest` bytes long, so an
// occurrence starts a 4-byte gram at each of its first step = shortest - 3 offsets, and one of those is a multiple of
// step. Each needle is indexed under the hashes of those grams; a bitmap of the hashes in use answers for the positions
// that start none.
struct NeedleIndex {
  static constexpr size_t kGram = 4;
  struct Entry {
    std::string_view needle;
    size_t kind, offset;
  };
  size_t step = 1;
  std::vector<std::vector<Entry>> by_hash = decltype(by_hash)(1 << 16);
  std::bitset<1 << 16> used;
  NeedleIndex() {
    const auto& c = error_catalogue();
    size_t shortest = SIZE_MAX;
    for (const auto& k : c)
      for (const char* w : k.any) shortest = std::min(shortest, std::string_view(w).size());
    if (shortest < kGram) throw std::logic_error("error catalogue: a needle shorter than 4 bytes");
    step = shortest - kGram + 1;
    for (size_t k = 0; k < c.size(); ++k)
      for (const char* w : c[k].any)
        for (size_t d = 0; d < step; ++d) {
          const uint32_t h = hash(w + d);
          by_hash[h].push_back({w, k, d});
          used.set(h);
        }
  }
  // The gram's 16-bit hash (Fibonacci hashing of its four bytes).
  static uint32_t hash(const char* gram) {
    uint32_t x = 0;
    std::memcpy(&x, gram, kGram);
    return x * 0x9E3779B1u >> 16;
  }
};

// "RuntimeError: message", "torch.distributed.DistBackendError: …", "KeyboardInterrupt" alone: a dotted name that
// starts the line (after indentation) and ends in Error or Exception, then ':' or the end of the line. Warnings
// ("UserWarning: …") are not failures.
bool python_exception_line(std::string_view line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || !(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_'))
    return false;
  const size_t start = i;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '.'))
    ++i;
  const auto name = line.substr(start, i - start);
  if (!(name.ends_with("Error") || name.ends_with("Exception"))) return false;
  return i == line.size() || (line[i] == ':' && (i + 1 == line.size() || line[i + 1] == ' '));
}

// `  File "<path>", line <N>, in <name>`: a frame of a Python traceback.
bool python_frame_line(std::string_view line) {
  const size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || !line.substr(i).starts_with("File \"")) return false;
  const size_t close = line.find("\", line ", i + 6);
  return close != std::string_view::npos && close + 8 < line.size() &&
         std::isdigit(static_cast<unsigned char>(line[close + 8])) &&
         line.find(", in ", close + 8) != std::string_view::npos;
}

}  // namespace

const std::vector<ErrorKind>& error_catalogue() {
  static const std::vector<ErrorKind> k = {
      {"ib-completion-error",
       {"Got completion from peer", "Got completion with error", "completion with error",
        "transport retry counter "
        "exceeded",
        "IBV_WC_RETRY_EXC_ERR", "local catastrophic error",
        // AWS EFA through the OFI plugin: "ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x… completed with error.
        // RC: 20", and libfabric's own "rxr_cq_write_tx_error: err: 20, prov_err: …" beside it
        "completed with error. RC:", "_cq_write_tx_error", "_cq_write_rx_error"},
       true,
       "an InfiniBand/RoCE work request failed (status 12 = retry counter exceeded: the peer did not answer over RDMA "
       "within NCCL_IB_TIMEOUT × NCCL_IB_RETRY_CNT; 5 = flushed after an earlier error; 4 = protection error; 10 = "
       "remote access error)",
       "The network, not the code: check the ports on both hosts (ibstatus, ibv_devinfo, mlxlink -d <dev> for errors "
       "and flaps), RoCE GID index (NCCL_IB_GID_INDEX) and PFC/ECN on the switches; run nccl-tests between the two "
       "hosts named. Status 5 lines are the consequence of the first non-5 status: read that one. On AWS EFA (NET/OFI "
       "lines) a send that fails at once is most often the security group: EFA needs all traffic allowed to and from "
       "the group itself (fi_pingpong -p efa between the two hosts checks it)"},
      {"ib-async-event",
       {"Got async event", "async fatal event", "async_event failed"},
       true,
       "the RDMA NIC reported an asynchronous error event (port error: the link went down or flapped; local "
       "catastrophic error: the adapter failed; local access violation / QP fatal: a memory registration or "
       "GPUDirect RDMA mapping the NIC could not use)",
       "On the host that logged it: the link (ibstatus, `mlxlink -d <dev>` for flaps and errors, dmesg for the "
       "adapter), the cable and switch port; for access violations GPUDirect RDMA's path (nvidia-peermem loaded, ACS "
       "off on the PCIe switches, NCCL_NET_GDR_LEVEL as a test). The completion errors that follow are its "
       "consequence"},
      {"ib-unavailable",
       {"Failed to open libibverbs", "libibverbs.so", "NET/IB : No device found", "No IB devices found",
        "ibv_open_device failed", "NET/IB : Unable to open", "ibv_get_device_list failed", "output empty list",
        "No eligible providers", "Unable to find a libfabric provider", "NET/OFI Failed to initialize",
        "Couldn't find any optimal provider",
        // libfabric found no provider for the OFI plugin: "NET/OFI OFI fi_getinfo() call failed: No data available"
        // (FI_ENODATA: no EFA device visible, e.g. /dev/infiniband not passed to the container)
        "fi_getinfo() call failed",
        // The network NCCL_NET names is not there ("net.cc:579 NCCL WARN Error: network gIB not found."), or the
        // plugin that provides it could not be loaded ("NET/Plugin: Plugin load returned 2 : …libc.so.6: version
        // `GLIBC_2.32' not found (required by …/libnccl-net.so)")
        "Error: network ", "Plugin load returned"},
       false,
       "NCCL found no usable RDMA device (InfiniBand/RoCE: libibverbs missing in the container, no /dev/infiniband, no "
       "HCA; AWS EFA: libfabric's provider found none), or the network plugin that provides it did not load (a "
       "library it needs, such as a newer glibc, is missing in the container)",
       "On a cluster with IB/RoCE install rdma-core/libibverbs in the image and expose /dev/infiniband (Kubernetes: "
       "the "
       "RDMA device plugin); `ibv_devices` inside the container must list the HCAs. On a single node this is harmless"},
      {"socket-error",
       {"Connection refused", "Connection reset by peer", "Connection closed by remote peer",
        "remote process exited or there was a network error", "socketProgress", "socketPoll", "Socket recv failed",
        "socketFinalizeAccept", "Net : Connection closed", "Broken pipe", "Call to connect returned",
        "No route to host", "Network is unreachable", "socketStartConnect", "connection closed by peer",
        "ncclSocketConnect", "Socket creation failed",
        // UCX's status for a peer address it cannot reach (UCS_ERR_UNREACHABLE), UCX-Py's error callbacks
        "Destination is unreachable",
        // Gloo's TCP pairs (a CPU process group, vLLM's and Ray's among them): "Gloo connectFullMesh failed with
        // [.../gloo/transport/tcp/pair.cc:144] no error"
        "connectFullMesh failed",
        // NCCL's SYSCHECK on its own sockets (misc/socket.cc): "Call to bind failed: Address already in use" (ports
        // run out with thousands of ranks), older "Call to bind failed : Cannot assign requested address"
        "Call to bind failed", "Call to listen failed", "Call to accept failed"},
       true,
       "a TCP connection between ranks failed or was closed: NCCL's bootstrap/socket transport, Gloo's pairs, or a "
       "peer process that died first",
       "Look for the first rank that failed (a crash, OOM or a timeout elsewhere closes every socket after it). Then "
       "the interface: NCCL_SOCKET_IFNAME (GLOO_SOCKET_IFNAME for Gloo) must name an interface every host can reach "
       "the others on (not docker0/lo), set on every node; firewalls must allow the ephemeral ports between nodes"},
      {"bootstrap-mismatch",
       {"Message truncated"},
       true,
       "bootstrap messages of a different size than expected: ranks run different NCCL versions, or two jobs share one "
       "unique id / MASTER_PORT",
       "Make every rank load the same NCCL (print torch.cuda.nccl.version() or NCCL_DEBUG=VERSION on each host, check "
       "LD_LIBRARY_PATH and pip's nvidia-nccl-cu*), and give each job its own MASTER_ADDR:MASTER_PORT"},
      {"shm-error",
       {"/dev/shm", "shared memory segment", "shm_open", "unable to allocate shared memory", "No space left on device",
        "Error while creating shared memory", "shmPtr", "Bus error"},
       true,
       "NCCL could not create or grow a shared-memory segment: /dev/shm is too small (Docker's default is 64 MB) or "
       "not shared",
       "Run the container with --shm-size=16g or --ipc=host (Kubernetes: an emptyDir with medium: Memory at /dev/shm); "
       "NCCL_SHM_DISABLE=1 only as a test"},
      {"nccl-system-error",
       {"unhandled system error", "ncclSystemError",
        "System call (e.g. socket, malloc) or external library call "
        "failed",
        "NET/OFI", "OFI NCCL failure", "Call to ibv_"},
       true,
       "a system call or external library NCCL uses failed (socket, shared memory, memory registration, file "
       "descriptors, libibverbs); the cause is on NCCL's WARN line before it",
       "Read the NCCL WARN line just before (run with NCCL_DEBUG=INFO if there is none): /dev/shm, ulimit -l "
       "(memlock unlimited for RDMA), ulimit -n, cgroup limits and the network interface are the usual causes"},
      {"nccl-internal-error",
       {"internal error", "ncclInternalError", "Internal check failed", "does not loop back to start",
        "no algorithm/protocol available"},
       true,
       "NCCL's own consistency check failed (often a setup NCCL did not expect: a topology it cannot parse, mixed "
       "versions, a plugin; \"ring N does not loop back to start\": the ranks computed different topologies)",
       "Re-run with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV and read the WARN line; try the newest NCCL, "
       "and without external network plugins (NCCL_NET_PLUGIN=none) to isolate them"},
      {"nccl-invalid-usage",
       {"invalid usage", "ncclInvalidUsage", "Duplicate GPU detected", "ncclInvalidArgument", "Invalid rank requested",
        "invalid argument (run with NCCL_DEBUG", "This usually reflects invalid usage of NCCL",
        // ncclGetErrorString(ncclInvalidArgument) after an NCCL call a framework names: XLA's "NCCL operation
        // ncclCommInitRankConfig(…) failed: invalid argument", RAFT's "call='ncclBroadcast(…)', Reason=4:invalid
        // argument" (kept to lines naming an nccl call, not CUDA's own "invalid argument")
        "invalid argument"},
       true,
       "the program called NCCL wrongly: two ranks on one GPU (Duplicate GPU), a wrong rank count, buffers or "
       "arguments that differ between ranks",
       "Give each rank its own GPU (torch.cuda.set_device(local_rank) before init; check CUDA_VISIBLE_DEVICES per "
       "rank), and the same world size, dtypes and counts on every rank"},
      {"nccl-remote-error",
       {"ncclRemoteError", "remote process exiting prematurely", "A call failed possibly due to a network error",
        // ncclGetErrorString(ncclRemoteError), as frameworks print an NCCL call's result ("XLA: Aborting communicator …
        // due to async NCCL error: remote process exited or there was a network error"); also a socket error's words
        "remote process exited or there was a network error"},
       true,
       "a peer failed or went away during a collective (its process died, or the network between them failed)",
       "Find the rank that died first (its own log: OOM, an exception, a kill by the scheduler) — this rank's error is "
       "the consequence"},
      {"nccl-oom",
       {"out of memory", "Failed to CUDA calloc", "Failed to CUDA malloc", "OutOfMemoryError",
        "cudaErrorMemoryAllocation",
        // The host's memory: Slurm reporting the kernel's OOM killer ("slurmstepd: error: Detected 1 oom_kill event
        // in StepId=…. Some of the step tasks have been OOM Killed.")
        "oom_kill event", "have been OOM Killed",
        // Ray's memory monitor killing workers on a node near its memory limit ("(raylet) node_manager.cc:3007: 2
        // Workers (tasks / actors) killed due to memory pressure (OOM)")
        "killed due to memory pressure"},
       true,
       "GPU (or pinned host) memory ran out, in NCCL's buffers or in the job around them; or the host's memory, where "
       "the kernel's OOM killer (Slurm's oom_kill events) or Ray's memory monitor ended a task",
       "Leave NCCL room: lower the batch or model memory, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; NCCL's "
       "own buffers grow with channels and peers (NCCL_BUFFSIZE, NCCL_NCHANNELS_PER_NET_PEER, fewer communicators). "
       "`gpusqueeze memory` on PyTorch's OOM message says what held the memory. Host memory (oom_kill): what one rank "
       "gathers in RAM (a full state dict saved from rank 0, DataLoader workers × prefetch, pinned buffers): shard the "
       "checkpoint (sharded state dict / torch.distributed.checkpoint), fewer workers, or more memory for the job "
       "(--mem)"},
      {"cuda-error",
       {"Cuda failure", "CUDA failure", "CUDA error:", "unhandled cuda error", "unhandled CUDA error",
        "ncclUnhandledCudaError", "illegal memory access", "cudaErrorIllegalAddress", "cudaIpcOpenMemHandle",
        "CUDA driver error", "illegal instruction", "uncorrectable ECC", "peer access is not supported",
        "peer mapping resources exhausted", "Call to CUDA function failed",
        // vLLM's CUDACHECK (its custom all-reduce): "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:455
        // 'invalid argument'"
        "Failed: Cuda error",
        // …and without "Failed: " in later versions: "Cuda error /workspace/csrc/custom_all_reduce.cuh:143 'invalid
        // resource handle'"
        "Cuda error ",
        // The driver API's error names in brackets (nvbandwidth, CUDA samples): "[CUDA_ERROR_INVALID_VALUE] invalid
        // argument in expression cuMemSetAccess(…)"
        "[CUDA_ERROR_"},
       true,
       "a CUDA call failed inside NCCL or the job (IPC/P2P mapping, an illegal address from a kernel, a GPU fault)",
       "Re-run with CUDA_LAUNCH_BLOCKING=1 to find the kernel; check `dmesg`/`nvidia-smi -q` for Xid errors and ECC; "
       "for IPC/P2P failures test with NCCL_P2P_DISABLE=1 and check ACS/IOMMU (gpusqueeze topo)"},
      {"version-mismatch",
       {"driver version is insufficient", "undefined symbol: nccl", "NCCL version mismatch", "version mismatch",
        "libnccl.so.2: cannot open", "CUDA driver version is insufficient",
        // The CUDA runtime's own words for a driver older than it (cudaErrorCallRequiresNewerDriver,
        // cudaErrorSystemDriverMismatch, cudaErrorCompatNotSupportedOnDevice).
        "API call is not supported in the installed CUDA driver",
        "system has unsupported display driver / cuda driver combination",
        "forward compatibility was attempted on non supported HW",
        // A config attribute left at NCCL_CONFIG_UNDEF_INT (INT_MIN): the ncclConfig_t was initialised by another
        // NCCL's header than the library that reads it ("Invalid config blocking attribute value -2147483648")
        "attribute value -2147483648",
        // ncclGetErrorString's words for a result code the NCCL library printing it does not know: the caller was
        // built against another NCCL than the one it loaded (TensorRT-LLM's plugin beside the NCCL torch bundles)
        "unknown result code"},
       true,
       "libraries that do not go together: the NCCL a framework loads, the CUDA runtime and the driver",
       "Print what each rank loads (torch.cuda.nccl.version(), nvidia-smi, ldd on libnccl) and align them: one NCCL "
       "for every rank, a driver at least as new as the CUDA runtime needs"},
      {"watchdog-timeout",
       {"Watchdog caught collective operation timeout", "watchdog got stuck", "Heartbeat monitor timed out",
        "Timeout at NCCL work", "timed out in", "detected by watchdog", "collective operation timeout",
        // The WorkNCCL description's own end, quoted without the watchdog's sentence: "WorkNCCL(SeqNum=1, …)
        // ran for 721595 milliseconds before timing out"
        "milliseconds before timing out",
        // A rank that did not time out itself, told by the one that did (PyTorch 2.5+: the Flight Recorder's dump
        // signal through the TCPStore).
        "dump signal due to a collective timeout",
        // PyTorch collects the desync report only after a watchdog timeout ("Failed to retrieve NCCL_DESYNC_DEBUG
        // report. … Timeout rank [0] last trace item must be kEventStart")
        "NCCL_DESYNC_DEBUG report"},
       true,
       "PyTorch's ProcessGroupNCCL watchdog timed out a collective: some rank never entered it (or never finished it)",
       "Find the rank that never joined: TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 dumps each "
       "rank's last collectives (read them with `gpusqueeze nccl analyze` or torch's fr_trace); then look at that "
       "rank's own log. NCCL has no collective timeout of its own: raising the timeout only helps a slow rank, "
       "never a hung one"},
      {"collective-mismatch",
       {"Detected mismatch between collectives", "mismatch between collectives", "CollectiveFingerPrint",
        "collective mismatch", "Mismatched collective",
        // The network transport receiving more than the receive posted (net_socket.cc, net_ib.cc): the two ranks
        // disagree on a collective's or a send/recv's size; NCCL's own words add "there may be a mismatch in collective
        // sizes". (bootstrap.cc's "Message truncated : received …" is bootstrap-mismatch.)
        "message truncated : receiving", "mismatch in collective sizes",
        // Gloo's pair receiving more than its posted buffer: "[enforce fail at …/gloo/transport/tcp/pair.cc:446]
        // op.preamble.length <= op.nbytes. 256000 vs 128000"
        "op.preamble.length <= op.nbytes",
        // Accelerate's debug mode (ACCELERATE_DEBUG_MODE=1) checking the shapes before a collective:
        // "DistributedOperationException: Cannot apply desired operation due to shape mismatches. All shapes across
        // devices must be valid."
        "due to shape mismatches"},
       true,
       "ranks called different collectives (or the same one with different sizes or dtypes) at the same point: a bug "
       "in the program, not in the network",
       "Make every rank take the same collective path: data-dependent branches, a rank skipping a step, uneven "
       "last batches (drop_last=True), parameters unused on some ranks (find_unused_parameters); "
       "TORCH_DISTRIBUTED_DEBUG=DETAIL names the first differing call"},
      {"lagging-rank",
       {"are the lagging ranks", "joined but didn't finish collective", "didn't join collective", "is not joined",
        "never joined any collectives", "missing ranks", "Missing ranks", "different collective operation counts",
        "operation counts"},
       true,
       "the desync report names the rank(s) that never joined (or never finished) the collective the others waited in",
       "Read the named rank's own log and stack (py-spy dump --pid on it): a data-loader stall, an exception, a "
       "different code path, or a slow/ dead host"},
      {"coordination-service",
       // JAX's (XLA's) distributed runtime: its coordination service marking a task failed and aborting every task
       // ("…/coordination/coordination_service.cc:1170] /job:jax_worker/replica:0/task:0 has been set to ERROR in
       // coordination service: UNAVAILABLE: Task … heartbeat timeout", "… unexpectedly tried to connect with a
       // different incarnation. It has likely restarted.")
       {"distributed_runtime/coordination", "CoordinationServiceError", "different incarnation",
        "Polled an error from coordination service"},
       true,
       "JAX's distributed runtime lost a task: its coordination service saw a task stop heartbeating (crashed, "
       "preempted, or blocked past the heartbeat timeout) or reconnect as a new incarnation (a restarted process, or "
       "a child process that ran jax.distributed.initialize() again), and aborts every task",
       "Read the named task's own log for its first error. A new incarnation without a restart is a second "
       "initialize in one job: guard jax.distributed.initialize() so data-loader workers and other child processes do "
       "not run it. A heartbeat timeout of a task that was alive is a task blocked too long (a large host "
       "allocation, a debugger): raise the coordination service's heartbeat timeout"},
      {"gpu-xid",
       // The kernel log's driver reports, pasted beside a job's failure: "NVRM: Xid (PCI:0000:0b:00): 119, pid=…,
       // Timeout after 45s of waiting for RPC response from GPU3 GSP!", an NVSwitch's "nvidia-nvswitch1: SXid
       // (PCI:0000:aa:00.0): 24007, …", the driver asking for a reset ("GPU marked for reset", NV_ERR_RESET_REQUIRED)
       {"NVRM: Xid", "Xid (PCI:", "SXid (PCI:", "GPU marked for reset", "NV_ERR_RESET_REQUIRED", "fallen off the bus"},
       true,
       "the GPU driver reported a fault (an XID: the GPU, its memory, NVLink or the GSP firmware; an SXid: an "
       "NVSwitch), or that a GPU needs a reset: the job on that GPU fails or hangs, and every rank with it",
       "Read the XID code (NVIDIA's XID catalogue, docs.nvidia.com/deploy/xid-errors): 13/31/43/45 are a program's "
       "own faults; 48/63/64/79/94/95/119/120 and NVLink or NVSwitch errors are the node's — drain it, reset the GPU "
       "(nvidia-smi -r when idle, or reboot), and move the job to another node; replace a GPU whose XIDs repeat"},
      {"no-gpu-visible",
       // The driver or the container giving the process no GPU: "failed call to cuInit: CUDA_ERROR_NO_DEVICE: no
       // CUDA-capable device is detected" (TensorFlow and JAX log it and go on on the CPU; PyTorch raises, which its
       // traceback tells), "CUDA-capable device(s) is/are busy or unavailable" (exclusive compute mode, or a GPU in a
       // bad state)
       {"no CUDA-capable device is detected", "CUDA_ERROR_NO_DEVICE", "is/are busy or unavailable",
        "No CUDA GPUs are available",
        // The management tools run where the driver is not loaded (a login node, a container without the devices):
        // nvidia-smi "couldn't communicate with the NVIDIA driver", rocm-smi "amdgpu not found in modules"
        "couldn't communicate with the NVIDIA driver", "amdgpu not found in modules"},
       false,
       "the process could see no usable GPU: none passed into the container (no /dev/nvidia* nodes, no --gpus), "
       "CUDA_VISIBLE_DEVICES empty or wrong, the driver not loaded, or a GPU busy (exclusive compute mode, another "
       "process) or in a state that needs a reset; frameworks that fall back run on the CPU, far slower",
       "Run nvidia-smi where the job runs (inside the container): no GPU listed → pass them in (docker --gpus all, "
       "the NVIDIA container toolkit, the device plugin's resource request); listed but busy → nvidia-smi -q for "
       "compute mode and the processes on it, and the kernel log (dmesg) for XIDs"},
      {"scheduler-refused",
       // Slurm ("srun: error: Unable to create step for job 1930: Invalid generic resource (gres) specification",
       // "Unable to satisfy cpu bind request"), the kubelet and the NVIDIA device plugin ("UnexpectedAdmissionError …
       // Allocate failed due to rpc error: … request for 'nvidia.com/gpu: 2' too large"), a controller refused by RBAC
       // ("… is forbidden: User \"system:serviceaccount:…\" cannot update resource \"jobs/status\"")
       {"Unable to create step for job", "Unable to satisfy cpu bind request", "CPU binding outside of job step",
        "Application launch failed", "UnexpectedAdmissionError", "Allocate failed due to rpc error",
        "is forbidden: User", "cannot update resource", "cannot create resource",
        // Ray's autoscaler: "Error: No available node types can fulfill resource request {'node:111.6.168.225':
        // 0.001, 'GPU': 1.0}" (a placement group asking for what no node of the cluster has: it waits forever)
        "No available node types can fulfill resource request"},
       true,
       "the scheduler or orchestrator refused to start (or resume) the job's work: a step or pod asking for what its "
       "allocation or the node's device plugin cannot give (GPUs, GRES, CPU binding), or a controller without the "
       "permission it needs (RBAC)",
       "Compare the request with what was granted: srun inside an allocation must ask within it (--gres=gpu:N, "
       "--cpus-per-task, --overlap to enter a running job); a pod's nvidia.com/gpu against the device plugin's sharing "
       "(time-slicing with failRequestsGreaterThanOne allows one); a controller's RBAC (kubectl auth can-i … "
       "--as=system:serviceaccount:NS:NAME) and the versions its integration needs; a Ray request for a resource "
       "'node:<ip>' no node has: the job and the cluster disagree on a node's address (ray status lists them; vLLM: "
       "VLLM_HOST_IP and ray start --node-ip-address the same on every node)"},
      {"scheduler-queued",
       // Kubernetes and Kueue keeping a job's pods waiting for GPUs: "0/4 nodes are available: 4 Insufficient
       // nvidia.com/gpu", "couldn't assign flavors to pod set worker: borrowing limit for nvidia.com/gpu … exceeded"
       {"Insufficient nvidia.com/gpu", "couldn't assign flavors", "FailedScheduling"},
       false,
       "the job's pods wait for GPUs (too few free, a queue's quota or borrowing limit reached, or preempted by a "
       "higher priority): it has not failed and starts when they free up",
       "If it should run now: the queue's quota and borrowing limits (kubectl describe clusterqueue), what holds the "
       "GPUs (kubectl describe nodes: Allocated resources), and the job's priority"},
      {"rdma-transport-failed",
       // A KV-cache transfer engine (Mooncake's TransferEngine) starting its RDMA transport and finding no NIC it can
       // use: "rdma_context.cpp:581] No suitable GID found on mlx5_bond_1/", "RdmaTransport: No available RNIC",
       // "Failed to install RDMA transport, type=rdma"
       // (not "No suitable GID found on <nic>" alone: a warning per NIC, the engine going on with the others)
       {"No available RNIC", "cannot initialize RDMA resources", "Failed to install RDMA transport"},
       true,
       "the job's RDMA transport (a KV-cache transfer engine's) found no usable NIC: no RDMA device visible (a "
       "container without /dev/infiniband), or none with a GID it accepts (IPv6-only GIDs, a bond without RoCE GIDs)",
       "Check `ibv_devices` and `show_gids` inside the container: pass the RDMA devices in (--device=/dev/infiniband, "
       "IPC_LOCK), then pick the NIC and GID index explicitly (Mooncake: MC_GID_INDEX; NCCL: NCCL_IB_HCA, "
       "NCCL_IB_GID_INDEX)"},
      {"nvshmem-error",
       // NVSHMEM's error macros (DeepEP, expert parallelism in vLLM/SGLang, NCCL's device API): "<source>:<line>: NULL
       // value <what>" and "<source>:<line>: non-zero status: <N> <what>", each a frame of the path back up
       // ("ibgda.cpp:1889: NULL value cannot allocate mlx5dv_devx_uar", "init.cu:1044: non-zero status: 7 nvshmem setup
       // connections failed"); taken only with NVSHMEM in the line (match_errors)
       {": NULL value ", ": non-zero status: ", "nvshmem setup connections failed", "nvshmem initialization failed"},
       true,
       "NVSHMEM (the GPU-initiated communication library under DeepEP and expert-parallel all-to-all) failed to start: "
       "most often its InfiniBand GPUDirect Async transport (IBGDA), which needs direct access to the NIC's queues "
       "from the GPU",
       "Read the deepest frame (the first line): for IBGDA, the container needs the RDMA devices and the rights to map "
       "the NIC's doorbells (--privileged, or --device=/dev/infiniband with IPC_LOCK and memlock unlimited; GB200 with "
       "IMEX: NVIDIA_IMEX_CHANNELS), the driver the peer-mapping setting IBGDA requires (NVreg_RegistryDwords="
       "\"PeerMappingOverride=1;\" or dma-buf), and NVSHMEM_IB_GID_INDEX / NVSHMEM_IB_TRAFFIC_CLASS that match the "
       "fabric; \"mem registration failed\" is GPUDirect RDMA missing (the nvidia_peermem module, NVSHMEM's FAQ). "
       "NVSHMEM's perftests (shmem_put_bw) reproduce it without the framework; NVSHMEM_IB_ENABLE_IBGDA=0 (where the "
       "framework allows it) takes the host-proxy transport instead"},
      {"nan-detected",
       // A framework's check that a rank's values went NaN/Inf before a collective: Megatron-Core's rerun state machine
       // ("Unexpected result nan on rank 13 at iteration #2 … found NaN in local grad norm for bucket #0 in backward
       // pass before data-parallel communication collective"), PyTorch's clip_grad_norm_(error_if_nonfinite=True)
       {"found NaN in local grad norm", "found Inf in local grad norm", "Unexpected result nan",
        "Unexpected result inf", "is non-finite, so it cannot be clipped"},
       true,
       "a rank's gradients (or loss) became NaN or Inf before the collective that would spread them: the numerics of "
       "the model, its data or a kernel on that rank, or a faulty GPU, not the network",
       "Megatron-Core reruns the iteration on the same rank: a NaN again is the numerics (learning rate or loss scale, "
       "the batch, an overflow in low precision, a known kernel bug: update Transformer Engine/cuDNN), a clean rerun "
       "points at the GPU (run DCGM diagnostics, dcgmi diag -r 3, on that node and drain it if it fails)"},
      {"world-size-mismatch",
       // TensorRT-LLM's runtime (worldConfig.cpp): "[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp", a
       // TP/PP engine started with another number of MPI ranks (Triton's tritonserver run without mpirun)
       {"mpiSize == tp * pp"},
       true,
       "the engine was built for tp × pp GPUs and started with another number of ranks: one process for a "
       "tensor-parallel engine, or a world size that does not match the build",
       "Start one rank per GPU of the engine: TensorRT-LLM's Triton backend through launch_triton_server.py "
       "--world_size=<tp×pp> (or mpirun -n <tp×pp> tritonserver …), and rebuild the engine if the GPU count differs"},
      {"custom-allreduce-off",
       // vLLM's custom all-reduce not used ("Custom allreduce is disabled due to an unsupported world size: 1", "…
       // because it's not supported on more than two PCIe-only GPUs"): NCCL carries the all-reduce instead
       {"Custom allreduce is disabled", "custom allreduce is disabled"},
       false,
       "vLLM's custom all-reduce is off and NCCL does the all-reduce instead: harmless at tensor-parallel size 1 "
       "(there is no all-reduce), a speed matter otherwise (small all-reduces of decode are slower through NCCL)",
       "At tensor-parallel size 1 nothing to do (newer vLLM no longer prints it). Otherwise the reason it gives: P2P "
       "between the GPUs (gpusqueeze topo: ACS/IOMMU, GeForce cards have none), more than two PCIe-only GPUs, or a "
       "world size it does not support"},
      {"cuda-system-not-ready",
       // CUDA error 802, cudaErrorSystemNotReady: "Error 802: system not yet initialized", "Failed to allocate device
       // vector A (error code system not yet initialized)!" (the GPU Operator's CUDA validator)
       {"system not yet initialized", "cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY"},
       true,
       "CUDA error 802, the system not yet initialised: on an NVSwitch system (HGX/DGX) the GPUs cannot run CUDA until "
       "NVIDIA Fabric Manager has configured the fabric, and it is not running, failed, or is another version than "
       "the driver",
       "On the host: systemctl status nvidia-fabricmanager and journalctl -u nvidia-fabricmanager; install the Fabric "
       "Manager of exactly the driver's version (pin both packages together: an upgraded driver beside a pinned Fabric "
       "Manager is the usual cause), enable and start it, then run the job again"},
      {"fabric-manager-error",
       // NVIDIA Fabric Manager's own errors ("[ERROR] not all local fabric manager instances finished their
       // configuration", "fabric manager error handler is called for unhandled config error type 8", "failed to
       // configure all the available GPUs or NVSwitches")
       {"fabric manager error handler", "not all local fabric manager instances",
        "failed to configure all the available GPUs or NVSwitches",
        "fabric manager NVIDIA GPU driver interface version"},
       true,
       "NVIDIA Fabric Manager failed to configure the NVSwitch fabric: until it does, CUDA on these GPUs fails with "
       "error 802 (system not yet initialised) and NCCL has no NVLink between them",
       "journalctl -u nvidia-fabricmanager for its first error: a version that differs from the driver's, a start "
       "racing the GPUs' own initialisation (on systems with GPU-resident fabric managers, start it after the driver "
       "is up, or restart it), an NVSwitch or NVLink fault (nvidia-smi -q, dmesg for SXid)"},
      {"fabric-manager-not-needed",
       // Fabric Manager started on a machine without NVSwitches: "request to query NVSwitch device information from
       // NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]", then it exits 1
       {"NV_WARN_NOTHING_TO_DO"},
       false,
       "Fabric Manager found no NVSwitch to manage and exited: on PCIe cards or NVLink bridges it is not needed, and "
       "its failed service says nothing about the GPUs",
       "Nothing to fix for GPU jobs: disable the service on machines without NVSwitches (systemctl disable "
       "nvidia-fabricmanager); it is needed only on NVSwitch systems (HGX/DGX)"},
      {"gpu-stack-not-ready",
       // The GPU Operator's validator pods failing on a node ("nvidia-operator-validator-pjhbf 0/1
       // Init:CrashLoopBackOff 17 (80s ago)"): its driver, toolkit or CUDA check does not pass
       {"CrashLoopBackOff", "Init:Error"},
       true,
       "the GPU Operator's validation of the node fails (its validator pods restart in a loop): the driver, the "
       "container toolkit or a CUDA check does not pass, so no GPU workload is scheduled there",
       "kubectl logs -n gpu-operator <the validator pod> -c cuda-validation (and -c driver-validation, "
       "toolkit-validation) for the failing check; on NVSwitch systems (DGX/HGX) the commonest cause is "
       "nvidia-fabricmanager not running or of another version than the driver (CUDA error 802)"},
      {"shm-broadcast-wait",
       // vLLM's shared-memory message queue between its engine and workers (shm_broadcast.py): "No available shared
       // memory broadcast block found in 60 seconds. This typically happens when some processes are hanging"
       {"No available shared memory broadcast block found"},
       false,
       "a vLLM process waited a minute on the engine's shared-memory queue: on a worker with no requests to serve, "
       "nothing (newer vLLM no longer logs it there); under load, a process that hangs (a collective stuck on another "
       "rank, a worker that died)",
       "If requests are being served and stall: find the process that stopped (py-spy dump --pid on each worker, the "
       "workers' own errors above, NCCL_DEBUG=INFO for a stuck collective); an idle server needs nothing"},
      {"net-config-advisory",
       // Google Cloud's NCCL shim (its guest config checker, before the FasTrak/TCPX plugin loads): "NCCL WARN NCCL/NET
       // (shim) mismatch recommended: NCCL_LIB_DIR=… (expected unset)" — an advisory; "mismatch enforced" stops init
       {"mismatch recommended:"},
       false,
       "the cloud's NCCL network shim found settings that differ from its recommended ones and went on (advisories; "
       "only its \"mismatch enforced\" settings stop NCCL)",
       "Nothing stops here: check that the channels go over the plugin's transport with GPU Direct (…/GDRDMA, not "
       "NET/Socket); align the listed settings with the platform's recommended ones when convenient",
       true},
      {"launcher-defaults",
       // Accelerate's launcher filling in what it was not told: "The following values were not passed to `accelerate
       // launch` and had defaults used instead: … More than one GPU was found, enabling multi-GPU training."
       {"were not passed to `accelerate launch`"},
       false,
       "Accelerate's launcher chose settings it was not given (the number of processes, machines, mixed precision) "
       "from what it found: the job runs as it decided",
       "Nothing failed. If the run should use another number of GPUs or processes, pass them (--num_processes, "
       "--num_machines, --mixed_precision) or write them once with `accelerate config`",
       true},
      {"imex-log",
       // The IMEX daemon's own log (NVIDIA Internode Memory Exchange, which multi-node NVLink on GB200/GB300 racks
       // needs): "IMEX Log initializing at: …", "[INFO] [tid 40] IMEX version 570.124.06 is running with …"
       {"IMEX Log initializing", "IMEX version "},
       false,
       "the IMEX daemon (the service multi-node NVLink memory sharing needs on GB200/GB300 racks) started and logged "
       "its configuration",
       "Nothing to fix in these lines. If multi-node NVLink jobs fail (NCCL: \"MNNVL … is available but not "
       "working\"), check every node's daemon and its channel: nvidia-imex-ctl -N for the domain's state, "
       "/dev/nvidia-caps-imex-channels/channel0 present on each node, the same nodes_config.cfg everywhere",
       true},
      {"ignored-exception",
       // Python's report of an exception it could not raise (in a destructor or a callback, often at interpreter
       // exit): "Exception ignored in: <function IpcMemory.__del__ at 0x7fe6…>", then a traceback
       {"Exception ignored in"},
       false,
       "Python ignored an exception raised in a destructor or callback (it prints it and goes on; at interpreter exit, "
       "module globals are already torn down): the job was not ended by it",
       "Harmless at exit if the results are right; otherwise the object's cleanup ran too late: close or free it "
       "explicitly before the program ends"},
      {"horovod-stall",
       // Horovod's stall inspector (horovod/common/stall_inspector.cc): a warning, the job goes on
       {"by subset of ranks and are waiting for remainder of ranks", "stall_inspector"},
       false,
       "Horovod's stall inspector: some ranks submitted a collective that the others have not, for over a minute "
       "(a slow rank, ranks submitting different tensors, or a rank that stopped); it turns into a hang if one never "
       "submits",
       "If the job moves on, a slow rank was catching up (check the rank's data loading). If it stops, find the rank "
       "missing from the tensors it names (HOROVOD_STALL_CHECK_TIME_SECONDS sets the warning's delay; "
       "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS ends the job instead of hanging)"},
      {"horovod-shutdown",
       {"Horovod has been shut down"},
       true,
       "Horovod shut down: a rank raised an exception, or finished (left the training loop) while others still called "
       "allreduce, allgather or broadcast",
       "Find the first exception across the ranks' logs; if there is none, a rank left the loop early (early "
       "stopping, an uneven last batch): take such decisions on one rank and broadcast them, and give every rank the "
       "same number of steps"},
      {"store-timeout",
       {"client socket has timed out", "client socket has failed to connect", "RendezvousTimeoutError",
        "RendezvousConnectionError", "RendezvousClosedError", "RendezvousStateError", "DistStoreError",
        "DistNetworkError", "store based barrier", "Timed out initializing process group", "Socket Timeout",
        "wait timeout after", "connect() timed out", "_create_tcp_store", "Waiting in store based barrier",
        "failed to listen on any local network address",
        // Older PyTorch's env:// rendezvous making its TCPStore (an exception raised in these frames is the store's)
        "_env_rendezvous_handler", "TCPStore(master_addr",
        // PyTorch ≥ 2.2 fetching the ncclUniqueId through the store: "… retrieving ncclUniqueId from [0] via c10d
        // key-value store by key '0', but store->get('0') got error: …"
        "store->get(",
        // torch.distributed's rendezvous making the store (an exception raised in this frame is the store's: "use_libuv
        // was requested but PyTorch was build without libuv support")
        "_create_c10d_store", "use_libuv was requested",
        // JAX's distributed runtime: its coordination service's barrier, which every task must reach
        // ("DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: … Timed out task names:
        // /job:jax_worker/replica:0/task:3")
        "Barrier timed out", "CoordinationService/Barrier",
        // Accelerate's launcher checking the store's port before it starts any rank ("Tried to launch distributed
        // communication on port `29500`, but another process is utilizing it")
        "but another process is utilizing it"},
       true,
       "the c10d store / rendezvous (JAX: the coordination service's barrier) failed before NCCL started: ranks could "
       "not reach MASTER_ADDR:MASTER_PORT (the coordinator), or not all ranks arrived in time",
       "Check that every rank got the same MASTER_ADDR/MASTER_PORT and WORLD_SIZE, that the port is open between "
       "hosts, and that all ranks were scheduled (a pending pod or Slurm task keeps the others waiting)"},
      {"nvls-error",
       // NCCL 2.29 words the bind failure itself: "Failed to bind NVLink SHARP (NVLS) Multicast memory of size …".
       {"cuMulticastCreate", "cuMulticastAddDevice", "cuMulticastBindMem", "NVLS Init failed", "nvlsGroupCreate",
        "(NVLS) Multicast memory"},
       true,
       "NVLink SHARP (NVLS) setup failed: the multicast objects could not be created (fabric manager, IMEX/driver "
       "support, or a VM/container that lacks it)",
       "Check nvidia-fabricmanager is running and healthy; as a workaround NCCL_NVLS_ENABLE=0 (costs bandwidth on "
       "allreduce at large sizes)"},
      {"p2p-disabled",
       {"P2P is disabled between", "P2P is not supported between", "P2P/IPC is disabled",
        // RCCL: 'NCCL WARN Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!'
        "Missing \"iommu=pt\""},
       false,
       "NCCL does not use direct GPU-to-GPU copies between some GPUs of one node (ACS/IOMMU, a virtualised PCIe "
       "topology, NCCL_P2P_DISABLE/NCCL_P2P_LEVEL)",
       "Check ACS and IOMMU (gpusqueeze topo), and that NCCL_P2P_DISABLE / NCCL_P2P_LEVEL are not set in the "
       "environment; on GeForce cards P2P is not supported by the driver"},
      {"comm-aborted",
       {"NCCL communicator was aborted", "ncclCommAbort", "Some NCCL operations have failed or timed out",
        "Process group watchdog thread terminated with exception", "NCCL communicator encountered error",
        "DistBackendError",
        // init.cc: a call on a communicator whose previous operation failed (its error is sticky)
        "Attempt to use communicator before the previous operation returned ncclSuccess"},
       true,
       "the NCCL communicator was aborted after an error or timeout; the reason is in an earlier line of this or "
       "another rank's log",
       "Read the first error before it (this rank's or the first rank to fail)"},
      {"mpi-error",
       // MPI's own transport and launcher (nccl-tests under mpirun: MPI moves NCCL's unique id and runs the ranks'
       // bootstrap collectives). From the triage corpus's two logs that fail there: UCX's ibv_create_ah on an SR-IOV
       // function the pod does not have (NVIDIA/nccl-tests #327), libfabric's OFI MTL aborting (#295).
       {"UCX  ERROR", "UCX ERROR", "MPI_ABORT was invoked", "OFI MTL is aborting", "PMIX ERROR", "ORTE_ERROR_LOG",
        // Cray MPICH failing in MPI_Init ("MPICH ERROR [Rank 0] … Fatal error in PMPI_Init_thread: Other MPI error")
        "MPICH ERROR", "Fatal error in PMPI_"},
       true,
       "MPI failed, not NCCL: its transport (UCX, libfabric) or launcher (PMIx/ORTE) — NCCL may never have started",
       "Test MPI alone between the same hosts (mpirun -np 2 -host a,b hostname, then osu_latency); for UCX name the "
       "HCAs each host really has (UCX_NET_DEVICES=mlx5_0:1; SR-IOV pods get different functions) or pick the "
       "transports (UCX_TLS); for libfabric the provider (FI_PROVIDER); or build nccl-tests without MPI and launch "
       "the ranks another way"},
      {"stopped-by-signal",
       // torchrun's elastic agent forwarding a signal it received to its workers (PyTorch 2.x: "Received
       // Signals.SIGHUP death signal, shutting down workers", "Received 15 death signal, …"; its SignalException).
       {"death signal, shutting down workers", "SignalException", "got signal: "},
       true,
       "the launcher received a signal from outside the job and stopped its workers: SIGHUP (1) when the terminal or "
       "SSH session that started it closed, SIGTERM (15) from a scheduler (time limit, preemption, a deleted pod) or "
       "a supervising process whose other component exited, SIGINT (2) from Ctrl-C",
       "Nothing in the workers failed: find who sent the signal. SIGHUP: run the launcher under tmux/screen or fully "
       "detached (setsid, stdin from /dev/null), not with a plain nohup in an SSH session. SIGTERM: the scheduler's "
       "log (sacct's State and the job's time limit, kubectl describe pod for evictions), or the log of the "
       "component that exited first"},
      {"nccl-call-failed",
       // A framework's wrapper around an NCCL call reporting its failure, with or without ncclGetErrorString's text:
       // Transformer Engine's "Failed, NCCL error <file>:223 ''", RAFT's "NCCL error encountered at: …", PyTorch's
       // "NCCL error in: …/ProcessGroupNCCL.cpp:NNN" (the reason, where the line has one, is read by its own kind).
       {"Failed, NCCL error", "NCCL error encountered at", "NCCL error in:"},
       true,
       "an NCCL call failed inside the framework; the reason is NCCL's own WARN line, which NCCL prints only with "
       "NCCL_DEBUG=WARN or INFO",
       "Re-run with NCCL_DEBUG=WARN (INFO for the setup) and read the WARN line before this one; the usual causes at "
       "init are a group some ranks did not create (every rank must call new_group), mismatched versions, or the "
       "network (NCCL_SOCKET_IFNAME)"},
      {"job-cancelled",
       // Slurm's step daemon ending the job: "slurmstepd: error: *** STEP 8384637.13 ON nid001 CANCELLED AT
       // 2023-…T… DUE TO TIME LIMIT ***", its OOM killer report "Detected 1 oom_kill event in StepId=…".
       {"DUE TO TIME LIMIT", "DUE TO PREEMPTION", "DUE TO NODE FAILURE", "CANCELLED AT", "oom-kill event",
        "oom_kill event",
        // salloc/srun told of a node of the allocation failing ("salloc: error: Node failure on worker-1")
        "error: Node failure on"},
       true,
       "the scheduler ended the job: its time limit (a job that usually finishes in time has most likely hung: the "
       "collectives wait for ever without a timeout shorter than the job's), a preemption, a failed node, or the "
       "kernel's OOM killer on the host",
       "Time limit: find the rank that stopped printing first and make hangs fail loudly before the limit (PyTorch: "
       "init_process_group(timeout=…) well under the job's limit, TORCH_NCCL_DUMP_ON_TIMEOUT=1 for the Flight "
       "Recorder). OOM kill: host memory (DataLoader workers × prefetch, pinned buffers; sacct's MaxRSS). "
       "Preemption or node failure: requeue from a checkpoint"},
      {"not-built-in",
       // The framework build has no NCCL: PyTorch on Windows or macOS, TensorFlow on Windows.
       {"doesn't have NCCL built in", "No OpKernel was registered to support Op 'Nccl"},
       true,
       "the framework was built without NCCL (PyTorch and TensorFlow on Windows, PyTorch on macOS): its NCCL "
       "collectives cannot run",
       "Use the backend this build has (PyTorch: backend=\"gloo\"; TensorFlow's MirroredStrategy: "
       "cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()), or run on Linux (or WSL2) with a CUDA build"},
      {"process-failed",
       {"ChildFailedError", "exitcode  : -", "Segmentation fault", "core dumped", "SIGABRT", "Signal 6 (SIGABRT)",
        "SIGSEGV", "Fatal Python error", "terminate called after throwing", "Test NCCL failure", "Test CUDA failure",
        // Open MPI's signal handler opens its crash report with this banner (the signal's name follows on a line of
        // its own, often cut from a paste); gdb's and UCX's say which signal.
        "*** Process received signal ***", "received signal SIGSEGV", "received signal SIGBUS",
        "received signal SIGABRT", "received signal SIGILL", "received signal SIGFPE", "Caught signal ",
        // A Python exception's traceback: every one of the triage corpus's 26 logs that print one is a failed job.
        "Traceback (most recent call last)",
        // The exceptions JAX and TensorFlow raise, printed without their traceback's header
        "XlaRuntimeError", "errors_impl.",
        // A GPU-sharing layer's (HAMi's libvgpu) own crash banner; vLLM's executor losing a worker process
        "Segfault encountered", "died unexpectedly",
        // Launchers reporting a rank that failed: Open MPI ("mpirun detected that one or more processes exited with
        // non-zero status", "… exited on signal 11"), MPICH/Hydra, Slurm's srun ("task 8: Exited with exit code 3")
        "processes exited with non-zero status", "the job has been aborted", "exited on signal",
        "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "Exited with exit code",
        // Serving launchers: text-generation-inference's ("Error: ShardCannotStart", "Shard 1 failed to start"),
        // Triton's model that did not load ("unexpected error when creating modelInstanceState")
        "ShardCannotStart", "failed to start", "error when creating modelInstanceState",
        // kubectl exec's report of the command it ran in a pod failing
        "command terminated with exit code"},
       true,
       "a process of the job died (abort, segfault, exception); other ranks then fail or hang",
       "Read the first failure in time across the ranks' logs: the rank that died first holds the cause"},
  };
  return k;
}

const ErrorKind& error_kind(std::string_view id) {
  const auto& cat = error_catalogue();
  return *std::find_if(cat.begin(), cat.end(), [&](const ErrorKind& k) { return id == k.id; });
}

const char* nccl_result_name(int code) {
  switch (code) {
    case 1:
      return "ncclUnhandledCudaError";
    case 2:
      return "ncclSystemError";
    case 3:
      return "ncclInternalError";
    case 4:
      return "ncclInvalidArgument";
    case 5:
      return "ncclInvalidUsage";
    case 6:
      return "ncclRemoteError";
    case 7:
      return "ncclInProgress";
    default:
      return "unknown";
  }
}

void store_bind_facts(std::string_view line, std::map<std::string, std::string>& facts) {
  for (const std::string_view key : {"failed to bind to ", "failed to listen on "}) {
    const size_t at = line.find(key);
    if (at == std::string_view::npos || facts.contains("port")) continue;
    const size_t open = line.find(" (", at);
    const auto addr = line.substr(at + key.size(), open == std::string_view::npos ? 0 : open - at - key.size());
    if (const size_t c = addr.rfind(':'); c != std::string_view::npos && c + 1 < addr.size())
      facts["port"] = std::string(addr.substr(c + 1));
  }
  // Accelerate's own check: "Tried to launch distributed communication on port `29500`, but another process is
  // utilizing it"
  if (const size_t at = line.find("on port `"); at != std::string_view::npos && !facts.contains("port")) {
    const size_t end = line.find('`', at + 9);
    if (end != std::string_view::npos) facts["port"] = std::string(line.substr(at + 9, end - at - 9));
  }
  if (has(line, "errno: 98") || has(line, "EADDRINUSE") || has(line, "error: 10048") ||
      has_ci(line, "address already in use") || has(line, "another process is utilizing it"))
    facts["bind_error"] = "port in use";
  else if ((has(line, "errno: 13") || has(line, "Permission denied")) && !facts.contains("bind_error"))
    facts["bind_error"] = "permission denied";
}

std::vector<const ErrorKind*> match_errors(std::string_view line, std::map<std::string, std::string>& facts) {
  std::vector<const ErrorKind*> out;
  const auto& cat = error_catalogue();
  static const NeedleIndex index;
  std::vector<bool> seen;  // sized on the first hit: most lines have none
  for (size_t p = 0; p + NeedleIndex::kGram <= line.size(); p += index.step) {
    const uint32_t h = NeedleIndex::hash(line.data() + p);
    if (!index.used[h]) continue;
    for (const auto& e : index.by_hash[h]) {
      if (e.offset > p || (!seen.empty() && seen[e.kind])) continue;
      const size_t start = p - e.offset;
      if (start + e.needle.size() <= line.size() && line.substr(start, e.needle.size()) == e.needle) {
        if (seen.empty()) seen.resize(cat.size(), false);
        seen[e.kind] = true;
      }
    }
  }
  for (size_t ki = 0; ki < seen.size(); ++ki) {
    const auto& k = cat[ki];
    if (!seen[ki]) continue;
    const std::string_view id = k.id;
    // Context that turns a hit into something else.
    if (id == "socket-error" && (has(line, "client socket") || has(line, "TCPStore") || has(line, "rendezvous") ||
                                 has(line, "Rendezvous") || has(line, "c10d")))
      continue;                                                         // the store's connection, read by store-timeout
    if (id == "cuda-error" && has_ci(line, "out of memory")) continue;  // nccl-oom
    if (id == "nccl-invalid-usage" && has(line, "invalid argument") && !has(line, "invalid argument (run with") &&
        (!has(line, "nccl") || has_ci(line, "cuda failure") || has(line, "CUDA error") || has(line, "cudaError")))
      continue;  // CUDA's cudaErrorInvalidValue says "invalid argument" too
    if (id == "nccl-oom" &&
        !(has(line, "NCCL") || has_ci(line, "cuda") || has(line, "OutOfMemory") || has(line, "Failed to CUDA") ||
          has(line, "oom_kill event") || has(line, "OOM Killed") || has(line, "killed due to memory pressure")))
      continue;
    if (id == "nccl-internal-error" && has(line, "internal error") && !has(line, "NCCL") && !has(line, "nccl") &&
        !has(line, "ncclInternal"))
      continue;
    if (id == "watchdog-timeout" && has(line, "timed out in") && !has(line, "ProcessGroupNCCL") && !has(line, "NCCL"))
      continue;
    if (id == "shm-error" && has(line, "Bus error") && !has(line, "shm") && !has(line, "shared memory")) continue;
    if (id == "version-mismatch" && has(line, "version mismatch") && !has_ci(line, "nccl") && !has_ci(line, "cuda") &&
        !has_ci(line, "driver"))
      continue;
    // A plugin that is not installed ("Plugin load returned 2 : libnccl-net.so: cannot open shared object file") is
    // NCCL probing: only one that is there and fails to load (a missing symbol or library version) is a finding.
    if (id == "ib-unavailable" && has(line, "Plugin load returned") && has(line, "cannot open shared object file"))
      continue;
    if (id == "nvls-error" && !(has_ci(line, "fail") || has_ci(line, "error") || has(line, "WARN"))) continue;
    if (id == "lagging-rank" && has(line, "operation counts") && !has(line, "different")) continue;
    if (id == "process-failed" && has(line, "failed to start") && !has(line, "Shard")) continue;
    if (id == "nvshmem-error" && !has_ci(line, "nvshmem")) continue;
    if (id == "cuda-error" && has(line, "[CUDA_ERROR_NO_DEVICE")) continue;  // no-gpu-visible
    // A pod restarting in a loop is the GPU stack's only where it is one of NVIDIA's (the GPU Operator's pods).
    if (id == "gpu-stack-not-ready" && !has(line, "nvidia-") && !has(line, "gpu-operator")) continue;
    // DistBackendError is PyTorch's exception for any NCCL error (an init failure as well as an abort): an abort only
    // where the line says one; otherwise the error it carries is read by its own kind.
    if (id == "comm-aborted" && has(line, "DistBackendError") &&
        !(has_ci(line, "abort") || has_ci(line, "timed out") || has_ci(line, "watchdog") ||
          has(line, "Some NCCL operations have failed") || has(line, "NCCL communicator encountered error")))
      continue;
    // The AWS OFI plugin (libfabric) failing a call: "NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument".
    // Its INFO lines, and a provider it did not find (ib-unavailable), are not failures.
    if (id == "nccl-system-error" && has(line, "NET/OFI") && !has(line, "ncclSystemError") &&
        !has(line, "unhandled system error") &&
        (!has(line, "WARN") || has(line, "Failed to initialize") || has(line, "fi_getinfo() call failed") ||
         has(line, "completed with error. RC:") ||
         !(has(line, "ERROR") || has(line, "RC: -") || has_ci(line, "couldn't") || has_ci(line, "failed") ||
           has_ci(line, "failure"))))
      continue;
    // A libibverbs call NCCL made failing ("Call to ibv_reg_dmabuf_mr failed with error Operation not supported"): a
    // failure on its own, with or without the "-> 2" chain NCCL_DEBUG=INFO would print after it. Finding no device
    // is ib-unavailable (NCCL falls back to sockets); the async-event reader's failing is that event's.
    if (id == "nccl-system-error" && has(line, "Call to ibv_")) {
      if (has(line, "ibv_open_device") || has(line, "ibv_get_device_list") || has(line, "ibv_fork_init")) continue;
      const size_t at = line.find("Call to ibv_") + 8;
      if (!facts.contains("verbs_call")) {
        const size_t end = line.find_first_of(" (", at);
        facts["verbs_call"] = std::string(line.substr(at, end == std::string_view::npos ? 40 : end - at));
        if (const size_t w = line.find("with error ", at); w != std::string_view::npos)
          facts["verbs_error"] = std::string(line.substr(w + 11, 60));
      }
    }
    // enqueue.cc's "no algorithm/protocol available": NCCL_ALGO/NCCL_PROTO forced one this operation or topology
    // cannot use (CollNet without SHARP, NVLS without NVSwitch multicast, Tree on one node).
    if (id == "nccl-internal-error" && has(line, "no algorithm/protocol available"))
      facts.try_emplace("no_algorithm", 1, '1');
    // paths.cc: NVLink is in the topology but P2P over it is off, which NCCL refuses (it returns an error) unless told
    // NCCL_IGNORE_DISABLED_P2P=1.
    if (id == "p2p-disabled" && has(line, "NVLINK connected GPUs")) facts.try_emplace("nvlink_p2p_off", 1, '1');
    // An async event that is no error ("GID table change", "port active") is the NIC telling, not failing.
    if (id == "ib-async-event" && !has_ci(line, "error") && !has_ci(line, "fatal") && !has_ci(line, "failed")) continue;
    if (id == "ib-async-event" && !facts.contains("event")) {
      // "Got async event : port error", "async fatal event on QP (0x…): local access violation …", "async fatal
      // event: <reason>": the text after the event's colon.
      size_t at = std::string_view::npos;
      for (const std::string_view key : {"async event : ", "async event: ", "async fatal event: "})
        if (const size_t f = line.find(key); f != std::string_view::npos && at == std::string_view::npos)
          at = f + key.size();
      if (const size_t f = line.find("async fatal event on ");
          at == std::string_view::npos && f != std::string_view::npos)
        if (const size_t c = line.find("): ", f); c != std::string_view::npos) at = c + 3;
      if (at != std::string_view::npos && at < line.size()) facts["event"] = std::string(line.substr(at, 80));
    }
    if (id == "ib-completion-error") {
      std::string status = number_after(line, "status=");
      if (status.empty()) status = number_after(line, "with error ");
      if (!status.empty() && !facts.contains("status")) facts["status"] = status;
      if (const auto v = number_after(line, "vendor err "); !v.empty() && !facts.contains("vendor_err"))
        facts["vendor_err"] = v;
      if (const size_t at = line.find("from peer "); at != std::string_view::npos && !facts.contains("peer")) {
        const size_t end = line.find_first_of(" <", at + 10);
        facts["peer"] = std::string(line.substr(at + 10, end == std::string_view::npos ? 40 : end - at - 10));
      }
    }
    if (id == "store-timeout") store_bind_facts(line, facts);
    // "Xid (PCI:0000:0b:00): 119, pid=…": the code after the bus id (an NVSwitch's SXid likewise)
    if (id == "gpu-xid" && !facts.contains("xid"))
      if (const size_t at = line.find("Xid (PCI:"); at != std::string_view::npos)
        if (const size_t close = line.find("): ", at); close != std::string_view::npos) {
          const std::string code = number_after(line.substr(close), "): ");
          if (!code.empty()) facts[at > 0 && line[at - 1] == 'S' ? "sxid" : "xid"] = code;
        }
    if (id == "bootstrap-mismatch") {
      facts["received"] = number_after(line, "received ");
      facts["expected"] = number_after(line, "bytes instead of ");
    }
    out.push_back(&k);
  }
  // A Python exception's last line ("RuntimeError: …", "torch.distributed.DistStoreError: …") that no needle names:
  // the job failed in its own words.
  if (out.empty() && python_exception_line(line)) out.push_back(&error_kind("process-failed"));
  // A Python traceback's frame ("  File \"…/allreduce.py\", line 967, in allreduce_fusion") where the paste lost its
  // header: a traceback all the same.
  if (out.empty() && python_frame_line(line)) out.push_back(&error_kind("process-failed"));
  // ggml's and other C++ CUDA_CHECKs: "CUDA error 704 at …/ggml-cuda.cu:6998: peer access is already enabled"
  if (out.empty() && line.starts_with("CUDA error ") && line.size() > 11 &&
      std::isdigit(static_cast<unsigned char>(line[11])))
    out.push_back(&error_kind("cuda-error"));
  // A CUDA failure inside NCCL's NVLS transport is NVLS failing (transport/nvls.cc: multicast objects).
  if (has(line, "nvls.cc") && (has(line, "WARN") || has(line, " -> ")) &&
      std::find(out.begin(), out.end(), &error_kind("nvls-error")) == out.end())
    out.push_back(&error_kind("nvls-error"));
  // "file.cc:123 -> 2": an NCCL call returned an error, printed at every level it passes back through. (rfind compares
  // at every position of the line: a memchr for the '>' first spares that on the many lines without one.)
  if (const size_t at = line.find('>') == std::string_view::npos ? std::string_view::npos : line.rfind(" -> ");
      at != std::string_view::npos && at + 4 < line.size() && std::isdigit(static_cast<unsigned char>(line[at + 4]))) {
    const auto before = line.substr(0, at);
    // "include/net.h:24 -> 2" is printed while NCCL probes for an external network plugin that is not there: harmless.
    const bool probe = before.find("net.h:") != std::string_view::npos;
    const bool source =
        !probe && (before.find(".cc:") != std::string_view::npos || before.find(".h:") != std::string_view::npos ||
                   before.find(".cu:") != std::string_view::npos || before.find(".c:") != std::string_view::npos);
    int code = 0;
    std::from_chars(line.data() + at + 4, line.data() + line.size(), code);
    const char* id = code == 1                ? "cuda-error"
                     : code == 2              ? "nccl-system-error"
                     : code == 3              ? "nccl-internal-error"
                     : code == 4 || code == 5 ? "nccl-invalid-usage"
                     : code == 6              ? "nccl-remote-error"
                                              : nullptr;
    if (source && id != nullptr) {
      facts["code"] = std::to_string(code);
      auto add = [&out](const ErrorKind* k) {
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
      };
      add(&error_kind(id));
      // Where a chain starts says what failed: a frame in NCCL's socket code (misc/socket.cc, include/socket.h) is a
      // socket, one in its shared-memory code (shmutils.cc, transport/shm.cc) is /dev/shm.
      if (code == 2 || code == 6) {
        const auto file =
            before.substr(before.find_last_of(" \t]") == std::string_view::npos ? 0 : before.find_last_of(" \t]") + 1);
        if (file.find("socket.") != std::string_view::npos) add(&error_kind("socket-error"));
        if (file.find("shmutils.") != std::string_view::npos || file.find("/shm.") != std::string_view::npos)
          add(&error_kind("shm-error"));
      }
    }
  }
  return out;
}

}  // namespace gsq::topo
