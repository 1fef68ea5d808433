// What an NCCL log means: the findings of nccl_findings, stage by stage (nccl_logs.hpp).
#include "topo/nccl_logs.hpp"

#include "core/error.hpp"
#include "core/nccl_env.hpp"
#include "core/xid.hpp"
#include "topo/log_framing.hpp"
#include "topo/nccl_errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace gsq::topo {

namespace {

// The job spans more than one node, by NCCL's count or by the hosts its lines name.
bool several_nodes(const NcclLog& log) {
  return log.nnodes > 1 || log.hosts.size() > 1 || log.test_hosts.size() > 1;
}

Finding make(std::string id, Severity sev, std::string title, std::vector<Evidence> ev, std::string fix,
             std::string subject = "NCCL") {
  return make_finding(std::move(id), sev, std::move(title), std::move(ev), std::move(fix),
                      "NCCL's troubleshooting guide and env.rst; nccl-tests' PERFORMANCE.md; PyTorch ProcessGroupNCCL; "
                      "the triage corpus tests/data/triage (labelled public logs)",
                      5, std::move(subject));
}

// PyTorch's watchdog: one finding per collective, with every rank that timed out in it.
void watchdog_findings(const NcclLog& log, std::vector<Finding>& out) {
  // PyTorch's watchdog: one finding per collective, with every rank that timed out in it.
  // A line that names only the collective's number ("… detected by watchdog at work: 1580") joins the record of that
  // number that names its op.
  std::map<int64_t, std::string> op_at_seq;
  for (const auto& t : log.timeouts)
    if (!t.op.empty() && t.seq >= 0) op_at_seq.emplace(t.seq, t.op);
  std::map<std::pair<std::string, int64_t>, std::vector<const NcclLog::Timeout*>> by_call;
  for (const auto& t : log.timeouts) {
    const auto named = t.op.empty() ? op_at_seq.find(t.seq) : op_at_seq.end();
    by_call[{named != op_at_seq.end() ? named->second : t.op, t.seq}].push_back(&t);
  }
  for (const auto& [key, ts] : by_call) {
    // The record that says most: one with the op and the time it ran.
    const auto& t = **std::max_element(ts.begin(), ts.end(), [](const auto* a, const auto* b) {
      return std::pair(!a->op.empty(), a->ran_ms) < std::pair(!b->op.empty(), b->ran_ms);
    });
    std::set<int> ranks;
    for (const auto* x : ts)
      if (x->rank >= 0) ranks.insert(x->rank);
    std::vector<Evidence> ev{{"op", t.op.empty() ? "?" : t.op}};
    if (t.seq >= 0) ev.push_back({"seq", std::to_string(t.seq)});
    ev.push_back({"timeout_ms", std::to_string(t.timeout_ms)});
    ev.push_back({"ran_ms", std::to_string(t.ran_ms)});
    if (t.numel >= 0) ev.push_back({"numel", std::to_string(t.numel)});
    if (!ranks.empty()) ev.push_back({"ranks", ranks_text(ranks)});
    if (t.last_enqueued >= 0) ev.push_back({"last_enqueued", std::to_string(t.last_enqueued)});
    if (t.last_completed >= 0) ev.push_back({"last_completed", std::to_string(t.last_completed)});
    std::string progress = t.last_completed >= 0 ? fmt::format("; last completed #{}", t.last_completed) : "";
    std::string stuck = t.timeout_ms > 0 && t.ran_ms > 3 * t.timeout_ms
                            ? " — it ran far past its timeout: the watchdog itself was blocked (a CUDA/NCCL call hung)"
                            : "";
    out.push_back(make(
        "nccl-watchdog-timeout", Severity::fail,
        fmt::format("PyTorch's watchdog timed out {}{} after {:.0f} s{}{}{}", t.op.empty() ? "a collective" : t.op,
                    t.seq >= 0 ? fmt::format(" #{}", t.seq) : "", static_cast<double>(t.ran_ms) / 1e3,
                    ranks.empty() ? "" : " on rank" + std::string(ranks.size() > 1 ? "s " : " ") + ranks_text(ranks),
                    progress, stuck),
        ev, error_kind("watchdog-timeout").first_try));
  }
}

// The ranks against each other: mismatched or lagging ranks (watchdog records, PG status, NCCL RAS, the desync
// report, TORCH_DISTRIBUTED_DEBUG), a hang interrupted under gdb, DDP ranks started twice.
void rank_findings(const NcclLog& log, std::vector<Finding>& out) {
  // Ranks compared: the same SeqNum with a different op or size is a mismatch (a code bug); different progress is a
  // rank that fell behind.
  {
    std::map<int64_t, std::set<std::pair<std::string, int64_t>>> at_seq;
    for (const auto& t : log.timeouts)
      if (t.seq >= 0 && !t.op.empty() && t.numel >= 0) at_seq[t.seq].insert({t.op, t.numel});  // both sides known
    for (const auto& [seq, calls] : at_seq)
      if (calls.size() > 1) {
        std::string what;
        for (const auto& [op, n] : calls) what += fmt::format("{}{}(numel {})", what.empty() ? "" : " vs ", op, n);
        out.push_back(make("nccl-collective-mismatch", Severity::fail,
                           fmt::format("Ranks timed out in different collectives at SeqNum {}: {}", seq, what),
                           {{"seq", std::to_string(seq)}, {"calls", what}},
                           error_kind("collective-mismatch").first_try));
      }
    // Behind: fewer collectives completed than the others (a rank may have enqueued more and still be stuck earlier:
    // torchtune#2093's rank 0 enqueued #619732 but completed only #619724, its peer #619726); where the log gives no
    // completed count, fewer enqueued.
    // Counts are compared within one process group only: each group numbers its collectives on its own.
    bool completed_known = false;
    for (const auto& [r, p] : log.progress) completed_known = completed_known || p.last_completed >= 0;
    auto count = [&](const auto& p) { return completed_known ? p.last_completed : p.last_enqueued; };
    std::map<std::string, std::vector<std::pair<int, const NcclLog::Progress*>>> by_group;
    for (const auto& [r, p] : log.progress) by_group[p.group].emplace_back(r, &p);
    int64_t most = -1;
    std::set<int> behind;
    for (const auto& [group, members] : by_group) {
      if (members.size() < 2) continue;
      int64_t top = -1;
      for (const auto& [r, p] : members) top = std::max(top, count(*p));
      for (const auto& [r, p] : members)
        if (r >= 0 && count(*p) >= 0 && count(*p) < top) behind.insert(r), most = std::max(most, top);
    }
    if (!behind.empty())
      out.push_back(make("nccl-lagging-rank", Severity::fail,
                         fmt::format("Rank{} {} {} fewer collectives than the others (up to #{}): behind the "
                                     "collective the others waited in",
                                     behind.size() > 1 ? "s" : "", ranks_text(behind),
                                     completed_known ? "completed" : "enqueued", most),
                         {{"ranks", ranks_text(behind)},
                          {completed_known ? "others_last_completed" : "others_last_enqueued", std::to_string(most)}},
                         error_kind("lagging-rank").first_try));
  }
  if (!log.interrupted_in.empty())
    out.push_back(make("nccl-tests-stopped", Severity::fail,
                       fmt::format("The program was interrupted (SIGINT, under gdb) while it waited in {}: the work it "
                                   "waited for never completed — a hang",
                                   log.interrupted_in),
                       {{"waiting_in", log.interrupted_in}},
                       "Find the pair or path that hangs: run the test on each pair of GPUs (-g 2, "
                       "CUDA_VISIBLE_DEVICES), then with NCCL_P2P_DISABLE=1 and NCCL_SHM_DISABLE=1 one at a time; a "
                       "pair that hangs only over P2P is ACS/IOMMU or a faulty link (gpusqueeze topo)"));
  // Lightning's DDP start: a rank started twice while others never did is two nodes that each took the first node's
  // ranks (the launcher gave them the same node rank): the rendezvous waits for the others forever.
  if (log.ddp_world > 0) {
    std::set<int> twice;
    for (const auto& [r, n] : log.ddp_rank_lines)
      if (n > 1) twice.insert(r);
    if (!twice.empty() && static_cast<int>(log.ddp_rank_lines.size()) < log.ddp_world)
      out.push_back(make(
          "nccl-duplicate-ranks", Severity::fail,
          fmt::format("Rank{} {} started twice and {} of the {} ranks never: two nodes took the same ranks, so the "
                      "rendezvous never completes",
                      twice.size() > 1 ? "s" : "", ranks_text(twice),
                      log.ddp_world - static_cast<int>(log.ddp_rank_lines.size()), log.ddp_world),
          {{"ranks_twice", ranks_text(twice)}, {"world_size", std::to_string(log.ddp_world)}},
          "The launcher's node count and the job's disagree: under Slurm, --nodes and --ntasks-per-node must match the "
          "trainer's num_nodes and devices (Lightning reads SLURM_NODEID/SLURM_PROCID); with torchrun, give each node "
          "its own --node_rank"));
    else if (twice.empty() && static_cast<int>(log.ddp_rank_lines.size()) < log.ddp_world)
      // Fewer ranks started than the world: in one process's output (each node prints its own) this is expected;
      // where the log stops there, the others never started and the ones that did wait in the rendezvous.
      out.push_back(make(
          "nccl-ddp-ranks-missing", Severity::info,
          fmt::format("Lightning started {} of its {} ranks in this log ({}): if the job stops here, the others never "
                      "started and these wait for them in the rendezvous",
                      log.ddp_rank_lines.size(), log.ddp_world, ranks_text([&] {
                        std::set<int> r;
                        for (const auto& [rank, n] : log.ddp_rank_lines) r.insert(rank);
                        return r;
                      }())),
          {{"world_size", std::to_string(log.ddp_world)}},
          "Check that the launcher starts devices × num_nodes processes: an environment that already sets LOCAL_RANK "
          "(or a Slurm/torchrun variable) makes Lightning take the job as launched from outside and start no others — "
          "unset it, or launch with torchrun/srun for every rank"));
  }
  // NCCL RAS: the ranks it lists are the smaller group's; whether they are behind or ahead is in the counts.
  if (!log.ras.listed.empty() && log.ras.launched.size() >= 2) {
    int64_t lo = log.ras.launched.front().second, hi = lo, total = 0;
    for (const auto& [n, op] : log.ras.launched) lo = std::min(lo, op), hi = std::max(hi, op), total += n;
    std::set<int> listed;
    int64_t listed_op = -1;
    for (const auto& [r, op] : log.ras.listed) listed.insert(r), listed_op = std::max(listed_op, op);
    const std::string what = log.ras.op.empty() ? "collective" : log.ras.op;
    const auto others = total - static_cast<int64_t>(listed.size());
    const bool ahead = listed_op == hi && hi > lo;
    out.push_back(make(
        "nccl-lagging-rank", Severity::fail,
        ahead
            ? fmt::format("NCCL RAS: rank{} {} launched {} operation {}; the other {} ranks stopped at {}: they never "
                          "joined it (or rank{} {} called one {} the others never call)",
                          listed.size() > 1 ? "s" : "", ranks_text(listed), what, hi, others, lo,
                          listed.size() > 1 ? "s" : "", ranks_text(listed), what)
            : fmt::format("NCCL RAS: rank{} {} launched {} operations only up to {}; the other {} ranks reached {}: "
                          "{} never joined it",
                          listed.size() > 1 ? "s" : "", ranks_text(listed), what, lo, others, hi,
                          listed.size() > 1 ? "they" : "it"),
        {{"ranks", ranks_text(listed)},
         {ahead ? "ranks_ahead" : "ranks_behind", ranks_text(listed)},
         {"operations", fmt::format("{}..{}", lo, hi)},
         {"report", log.ras.lines.empty() ? "" : log.ras.lines.front()}},
        ahead ? "Find why the majority stopped before that operation (py-spy dump one of them: a data-loader stall, an "
                "exception, a rank-dependent branch that skips a collective); the ranks that went on only wait"
              : error_kind("lagging-rank").first_try));
  }
  if (!log.ras.no_data.empty())
    out.push_back(make(
        "nccl-lagging-rank", Severity::warn,
        fmt::format("NCCL RAS has no communicator data from rank{} {}: the process may be hung, dead or unreachable "
                    "(RAS reports it INCOMPLETE)",
                    log.ras.no_data.size() > 1 ? "s" : "", ranks_text(log.ras.no_data)),
        {{"ranks", ranks_text(log.ras.no_data)}, {"report", log.ras.lines.empty() ? "" : log.ras.lines.front()}},
        "Check that process on its node: alive (ps), progressing (py-spy dump), its GPU healthy (dmesg: Xid). On NCCL "
        "2.27.x, absurd rank numbers or NOCOMM groups in the same report are the RAS client's own bug (fixed in "
        "2.29.2)"));
  if (!log.lagging_ranks.empty())
    out.push_back(
        make("nccl-lagging-rank", Severity::fail,
             fmt::format("The desync report names rank{} {} as lagging (never joined or never finished the "
                         "collective)",
                         log.lagging_ranks.size() > 1 ? "s" : "", ranks_text(log.lagging_ranks)),
             {{"ranks", ranks_text(log.lagging_ranks)}, {"report", log.desync.empty() ? "" : log.desync.front()}},
             error_kind("lagging-rank").first_try));
  if (!log.mismatches.empty())
    out.push_back(make("nccl-collective-mismatch", Severity::fail,
                       "Ranks called different collectives (TORCH_DISTRIBUTED_DEBUG's fingerprint check)",
                       {{"message", log.mismatches.front().substr(0, 300)}},
                       error_kind("collective-mismatch").first_try));
}

// The error catalogue (nccl_errors): every family the log shows, with what its lines add (status, verbs call,
// the store's port, an IB async event).
void catalogue_findings(const NcclLog& log, std::vector<Finding>& out) {
  // The catalogue: every family seen, in the order the log shows them.
  const bool socket_channels = log.transports.contains("NET/Socket");
  const bool multinode = several_nodes(log);
  // A wrapper's "NCCL error" says only that a call failed: said where no other kind of NCCL failure names why.
  const bool reason_known = std::any_of(log.errors.begin(), log.errors.end(), [](const auto& e) {
    return e.id != "nccl-call-failed" && e.id != "process-failed" && error_kind(e.id).fatal;
  });
  for (const auto& e : log.errors) {
    const auto& k = error_kind(e.id);
    if (e.id == "nccl-call-failed" && reason_known) continue;
    if (e.id == "watchdog-timeout" && !log.timeouts.empty()) continue;  // named above, with its numbers
    if ((e.id == "lagging-rank" &&
         (!log.lagging_ranks.empty() || !log.ras.listed.empty() || !log.ras.no_data.empty())) ||
        (e.id == "collective-mismatch" && !log.mismatches.empty()))
      continue;
    if (e.id == "ib-unavailable" && !multinode && !socket_channels) {
      out.push_back(make("nccl-ib-unavailable", Severity::info,
                         "NCCL found no InfiniBand/RoCE device (harmless on one node; on a cluster it falls back to "
                         "TCP)",
                         {{"first", e.example}}, k.first_try));
      continue;
    }
    const bool other_fatal = std::any_of(log.errors.begin(), log.errors.end(),
                                         [&](const ErrorSeen& x) { return x.id != e.id && error_kind(x.id).fatal; });
    // Only failures before the (last) fallback: a system error after it is a failure of the job that went on.
    if (e.id == "nccl-system-error" && !log.fallbacks.empty() && !other_fatal && log.timeouts.empty() &&
        e.last_line < log.last_fallback_line) {
      // The failed calls were a feature starting up, and NCCL said it went on without it.
      out.push_back(
          make("nccl-fallback", Severity::warn,
               fmt::format("NCCL could not start a feature and went on without it: {}", log.fallbacks.front()),
               {{"lines", std::to_string(e.count)}, {"first", e.example}, {"fallback", log.fallbacks.front()}},
               "The job runs, on a slower path: fix what the WARN before the fallback names (SHARP/CollNet: "
               "the SHARP daemon and the job's access to it; a plugin: its library and version), or turn the "
               "feature off (NCCL_COLLNET_ENABLE=0) to keep the log quiet"));
      continue;
    }
    if (e.id == "nccl-system-error" && log.net_plugin_init_failed && e.plugin_lines == e.count) {
      // The plugin's failed calls were its initialisation, which NCCL survives: what it fell back to is judged on its
      // own (socket-fallback, ib-unavailable).
      out.push_back(make("nccl-net-plugin-unavailable", Severity::info,
                         "The external network plugin (aws-ofi-nccl) failed to initialise; NCCL went on without it",
                         {{"lines", std::to_string(e.count)}, {"first", e.example}},
                         "Where the cluster has EFA, the plugin must load: check the libfabric provider (fi_info -p "
                         "efa), the plugin's version against NCCL's, and FI_PROVIDER"));
      continue;
    }
    std::vector<Evidence> ev{{"lines", std::to_string(e.count)}, {"first", e.example}};
    if (!e.ranks.empty()) ev.push_back({"ranks", ranks_text(e.ranks)});
    for (const auto& [name, value] : e.facts) ev.push_back({name, value});
    std::string title = k.meaning;
    title[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(title[0])));
    std::string fix = k.first_try;
    std::map<std::string, std::string> bind;  // the store's: what the failing line says, else the bind warnings
    if (e.id == "store-timeout") {
      bind = e.facts;
      bind.insert(log.store_bind.begin(), log.store_bind.end());
    }
    if (bind.contains("bind_error")) {
      // The server side: this host could not open the store's port, whatever MASTER_ADDR the others use.
      const std::string port = bind.contains("port") ? " " + bind.at("port") : "";
      const bool in_use = bind.at("bind_error") == "port in use";
      title = in_use ? fmt::format(
                           "The c10d store could not listen: port{} is already in use on this host (another "
                           "job, or an earlier run still holding it)",
                           port)
                     : fmt::format(
                           "The c10d store could not listen on port{}: permission denied (a port below 1024 "
                           "needs root)",
                           port);
      fix = in_use ? "Give each job on a host its own port (torchrun --master-port / --rdzv-endpoint HOST:PORT, "
                     "MASTER_PORT), or end what holds it (`ss -ltnp | grep :PORT`); torchrun --standalone picks a free "
                     "one"
                   : "Use a port above 1024 for MASTER_PORT / --master-port";
    }
    if (e.id == "ib-async-event" && e.facts.contains("event")) {
      const auto& ev_text = e.facts.at("event");
      const char* why = has(ev_text, "port error")         ? ": the link went down or flapped"
                        : has(ev_text, "catastrophic")     ? ": the adapter failed"
                        : has(ev_text, "access violation") ? ": a memory registration or GPUDirect RDMA mapping it "
                                                             "could not use"
                                                           : "";
      title = fmt::format("The RDMA NIC reported the async event \"{}\"{} ({} line{})", ev_text, why, e.count,
                          e.count > 1 ? "s" : "");
    }
    if (e.id == "gpu-xid" && e.facts.contains("xid"))
      title = fmt::format("The GPU driver reported {} ({} line{}): {}", xid_advice(std::stod(e.facts.at("xid"))),
                          e.count, e.count > 1 ? "s" : "", k.meaning);
    if (e.id == "ib-completion-error" && e.facts.contains("status"))
      title = fmt::format("InfiniBand/RoCE completions failed (status {}{}{}); {}", e.facts.at("status"),
                          e.facts.at("status") == "12"  ? ", retry counter exceeded"
                          : e.facts.at("status") == "5" ? ", flushed after an earlier error"
                          : e.facts.at("status") == "4" ? ", local protection error: often ACS breaking GPU Direct RDMA"
                                                        : "",
                          e.facts.contains("vendor_err") ? ", vendor err " + e.facts.at("vendor_err") : "", k.meaning);
    if (e.id == "nccl-system-error" && e.facts.contains("verbs_call")) {
      // What each verbs call needs (NCCL's net_ib.cc and ibvwrap.cc): registering memory needs locked memory and a
      // GPU Direct RDMA path; queue pairs need the NIC's limits and, on RoCE, the right GID.
      const auto& call = e.facts.at("verbs_call");
      title = fmt::format("The RDMA call {} failed{}", call,
                          e.facts.contains("verbs_error") ? " (" + e.facts.at("verbs_error") + ")" : "");
      if (has(call, "dmabuf"))
        fix =
            "DMA-BUF registration is not supported by this host's RDMA stack or kernel: NCCL_DMABUF_ENABLE=0 makes "
            "NCCL use nvidia-peermem instead; or update MLNX_OFED/rdma-core and the kernel (5.12+), or NCCL";
      else if (has(call, "reg_mr"))
        fix =
            "Memory registration failed: `ulimit -l unlimited` for the job (containers: --ulimit memlock=-1), "
            "nvidia-peermem loaded for GPU buffers (`lsmod | grep peermem`), NCCL_NET_GDR_LEVEL as a test";
      else if (has(call, "qp") || has(call, "cq"))
        fix =
            "The NIC refused a queue pair or completion queue: on RoCE set NCCL_IB_GID_INDEX to a RoCEv2 GID "
            "(show_gids), check the port is active (ibstatus) and the device's QP limits; fewer channels "
            "(NCCL_IB_QPS_PER_CONNECTION, NCCL_MAX_NCHANNELS) as a test";
    }
    Severity severity = k.fatal ? Severity::fail : k.advisory ? Severity::info : Severity::warn;
    // Failed before the elastic agent restarted the workers, which then finished: recovered, not the job's end.
    if (severity == Severity::fail && log.succeeded_line > 0 && e.last_line < log.restart_line) {
      severity = Severity::warn;
      title += " — recovered: the elastic agent restarted the worker group and it finished";
    }
    if (e.id == "nccl-internal-error" && e.facts.contains("no_algorithm")) {
      title =
          "NCCL found no algorithm and protocol it can use for a collective (enqueue.cc): a forced NCCL_ALGO or "
          "NCCL_PROTO this topology or operation cannot run";
      fix =
          "Unset NCCL_ALGO and NCCL_PROTO (or allow more: NCCL_ALGO=Ring,Tree); CollNet needs SHARP on the network "
          "and its plugin, NVLS needs NVSwitch multicast (fabric manager), Tree needs more than one node";
    }
    if (e.id == "p2p-disabled" && e.facts.contains("nvlink_p2p_off")) {
      severity = Severity::fail;  // NCCL returns an error here rather than go on over PCIe
      title = "P2P is off between GPUs joined by NVLink: NCCL stops (it takes a hardware or driver fault)";
      fix =
          "Check the NVLinks (nvidia-smi nvlink -s, -e for errors) and the fabric manager on NVSwitch systems; drain "
          "the node if a link is down. NCCL_IGNORE_DISABLED_P2P=1 lets NCCL go on through host memory, slowly";
    }
    if (e.id == "bootstrap-mismatch" && e.facts.contains("received"))
      title = fmt::format("Bootstrap received {} bytes instead of {}: {}", e.facts.at("received"),
                          e.facts.contains("expected") ? e.facts.at("expected") : "?", k.meaning);
    if (e.facts.contains("code") && e.count > 0)
      ev.push_back({"nccl_result", nccl_result_name(std::atoi(e.facts.at("code").c_str()))});
    out.push_back(make("nccl-" + std::string(e.id), severity, title, ev, fix));
  }
}

// The paths NCCL chose: TCP between nodes, host memory within one, InfiniBand without GPU Direct RDMA.
void transport_findings(const NcclLog& log, std::vector<Finding>& out) {
  const bool socket_channels = log.transports.contains("NET/Socket");
  const bool multinode = several_nodes(log);
  // Inter-node traffic over TCP: slow (a warning), unless hosts disagree on the network, which NCCL cannot run.
  std::set<std::string> networks;
  for (const auto& [h, n] : log.network_by_host) networks.insert(n);
  if (networks.size() > 1) {
    std::string which;
    for (const auto& [h, n] : log.network_by_host) which += (which.empty() ? "" : ", ") + h + " " + n;
    out.push_back(make(
        "nccl-socket-fallback", Severity::fail,
        fmt::format("Processes chose different networks ({}): the ranks cannot connect", which), {{"networks", which}},
        "Every host must see the same RDMA devices: the hosts on Socket lack libibverbs, /dev/infiniband "
        "or an active port (ibv_devinfo there); or pin one network for all with NCCL_IB_DISABLE=1 "
        "(slow) until they are fixed"));
  } else {
    const bool socket_network = log.network == "Socket" || log.socket_fallback;
    // The user pointed NCCL at RDMA devices (NCCL_IB_HCA, IB not disabled): sockets are a fallback there, not a choice.
    const auto hca = log.env.find("NCCL_IB_HCA"), off = log.env.find("NCCL_IB_DISABLE");
    const bool ib_requested =
        hca != log.env.end() && !hca->second.empty() && (off == log.env.end() || off->second != "1");
    if (socket_channels || (multinode && (socket_network || log.ibverbs_missing)) ||
        (socket_network && (log.ib_device_failed || ib_requested)))
      out.push_back(make("nccl-socket-fallback", Severity::warn,
                         log.ibverbs_missing
                             ? "libibverbs could not be loaded: NCCL carries inter-node traffic over TCP sockets"
                             : "NCCL carries inter-node traffic over TCP sockets",
                         {{"ibverbs_missing", log.ibverbs_missing ? "yes" : "no"},
                          {"network", log.network.empty() ? "?" : log.network},
                          {"socket_channels", std::to_string(socket_channels ? log.transports.at("NET/Socket") : 0)},
                          {"nodes", std::to_string(log.nnodes)}},
                         "On an InfiniBand/RoCE cluster install rdma-core (libibverbs) in the container and expose "
                         "/dev/infiniband; check that NCCL_IB_DISABLE is not set; NCCL_DEBUG=INFO should then say "
                         "NET/IB and the channels …/GDRDMA. On Ethernet-only clusters sockets are expected: raise "
                         "NCCL_SOCKET_NTHREADS/NCCL_NSOCKS_PERTHREAD"));
  }
  // Intra-node: GPUs of one node talking through host memory.
  // Expected on GeForce cards and across sockets; a loss on servers whose GPUs share a PCIe switch or NVLink.
  if (log.transports.contains("SHM") && !log.transports.contains("P2P/IPC") && !log.transports.contains("P2P/CUMEM") &&
      !log.transports.contains("P2P/direct") && !log.transports.contains("NVLS"))
    out.push_back(make("nccl-p2p-disabled", Severity::info,
                       "GPUs of one node exchange data through host memory (SHM), not P2P: expected on GeForce cards "
                       "and across CPU sockets, a loss where the GPUs share a PCIe switch or NVLink",
                       {{"shm_channel_lines", std::to_string(log.transports.at("SHM"))}},
                       error_kind("p2p-disabled").first_try));
  // Inter-node RDMA without GPU Direct.
  if (log.transports.contains("NET/IB") && !log.transports.contains("NET/IB/GDRDMA"))
    out.push_back(make("nccl-no-gdrdma", Severity::warn,
                       "Inter-node channels use InfiniBand without GPU Direct RDMA (no /GDRDMA): data is staged "
                       "through host memory",
                       {{"net_ib_channel_lines", std::to_string(log.transports.at("NET/IB"))}},
                       "Load nvidia-peermem (or use dma-buf with a recent kernel and NCCL), check that the NIC and GPU "
                       "share a PCIe switch (gpusqueeze topo) and that NCCL_NET_GDR_LEVEL is not lowered"));
}

// NCCL settings in the log that do not do what their name says (core/nccl_env).
void env_findings(const NcclLog& log, std::vector<Finding>& out) {
  // Environment: invented, removed, deprecated, PyTorch's, debug-only (core/nccl_env).
  for (const auto& [name, value] : log.env) {
    const auto it = nccl_env_notes().find(name);
    if (it == nccl_env_notes().end()) continue;
    const bool debug_off = (name == "NCCL_IB_DISABLE" || name == "NCCL_P2P_DISABLE") && value == "0";
    if (debug_off) continue;
    out.push_back(make("nccl-env", name == "NCCL_IB_DISABLE" ? Severity::warn : Severity::info,
                       fmt::format("{}={} {}", name, value, it->second.truth), {{name, value}}, it->second.instead));
  }
}

// nccl-tests: wrong results, a sweep that stopped, bandwidth against the hardware, cliffs.
void nccl_tests_findings(const NcclLog& log, std::vector<Finding>& out) {
  // nccl-tests: wrong results, a sweep that stopped, bandwidth against the hardware, cliffs.
  int64_t wrong = 0;
  double max_error = 0;
  for (const auto& r : log.rows) {
    wrong += std::max<int64_t>(0, r.wrong[0]) + std::max<int64_t>(0, r.wrong[1]);
    max_error = std::max(max_error, r.max_error);
  }
  if (wrong > 0 || log.tests_failed || log.out_of_bounds > 0)
    out.push_back(
        make("nccl-tests-wrong", Severity::fail,
             fmt::format("nccl-tests found wrong results ({} wrong elements{}): the collective corrupts data", wrong,
                         log.out_of_bounds > 0 ? fmt::format(", {} out of bounds", log.out_of_bounds) : ""),
             {{"wrong", std::to_string(wrong)}, {"out_of_bounds", std::to_string(log.out_of_bounds)}},
             "Data corruption, not performance: check GPU memory ECC and Xid errors (gpusqueeze doctor), "
             "the P2P path (NCCL_P2P_DISABLE=1 as a test; ACS/IOMMU), and NCCL/driver versions"));
  const bool fatal_error =
      std::any_of(log.errors.begin(), log.errors.end(), [](const ErrorSeen& e) { return error_kind(e.id).fatal; });
  // Devices named and no result: where NCCL's own init lines follow, the log is the run's, and it ends inside init or
  // the first collective (a hang); a header alone may be a paste cut short.
  const bool nccl_ran = !log.nccl_version.empty() || !log.hosts.empty();
  // NCCL destroying its communicators ("… - Destroy COMPLETE") or the closing "# Avg bus bandwidth": the run reached
  // its end, and the paste left its rows out.
  const bool ran_to_end = log.destroy_complete > 0 || log.avg_busbw.has_value();
  if (log.rows.empty() && !log.devices.empty() && !fatal_error && ran_to_end)
    out.push_back(make("nccl-tests-no-rows", Severity::info,
                       "nccl-tests ran to its end (NCCL destroyed its communicators) but the log holds no result row",
                       {{"devices", std::to_string(log.devices.size())},
                        {"destroy_complete_lines", std::to_string(log.destroy_complete)}},
                       "Paste the result table (the rows between the header and \"# Avg bus bandwidth\") to have "
                       "the bandwidth judged against the hardware"));
  if (log.rows.empty() && !log.devices.empty() && !fatal_error && !ran_to_end)
    out.push_back(make("nccl-tests-stopped", nccl_ran ? Severity::fail : Severity::warn,
                       nccl_ran ? "nccl-tests named its devices and NCCL started, but no result followed: the run hung "
                                  "in NCCL's init or its first collective"
                                : "nccl-tests named its devices but printed no result: it hung before the first size "
                                  "(or the paste stops there)",
                       {{"devices", std::to_string(log.devices.size())}},
                       "Run again with NCCL_DEBUG=INFO: the last INFO line says where init stopped (a rank with Init "
                       "START and no COMPLETE); test NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 one at a time"));
  if (log.failed_at_bytes > 0)
    out.push_back(make(
        "nccl-tests-stopped", Severity::fail,
        fmt::format("nccl-tests failed on its {} B row: the error printed there ended the sweep", log.failed_at_bytes),
        {{"failed_at_bytes", std::to_string(log.failed_at_bytes)}},
        "Fix the error it printed (the CUDA or NCCL failure on that row); then re-run that size alone "
        "(-b and -e both at it) with NCCL_DEBUG=INFO before the whole sweep"));
  // Or its table's header and no row, where a failure follows (the devices' lines cut from the paste).
  if (log.rows.empty() && fatal_error && ((!log.devices.empty() && nccl_ran) || log.table_header))
    out.push_back(make("nccl-tests-stopped", Severity::info,
                       "nccl-tests stopped before its first result: the error above ended (or hung) the run",
                       {{"devices", std::to_string(log.devices.size())}},
                       "Fix the error first; then run nccl-tests again to measure"));
  if (!log.rows.empty() && log.validation_off && wrong == 0 && !log.tests_failed)
    out.push_back(make("nccl-tests-unvalidated", Severity::info,
                       "nccl-tests ran with validation off (-c 0): #wrong is N/A, so nothing checked the results; the "
                       "table measures bandwidth only",
                       {{"rows", std::to_string(log.rows.size())}},
                       "Run once with -c 1 (the default) to check the results before trusting the path"));
  // A bandwidth the user's own benchmark printed (no nccl-tests table, so no device lines name the hardware): said,
  // with what the paths give, rather than judged against a guess.
  if (log.rows.empty() && !log.reported_busbw.empty()) {
    const double best = *std::max_element(log.reported_busbw.begin(), log.reported_busbw.end());
    const bool across_nodes = log.reported_ranks > 8 || log.nnodes > 1;
    out.push_back(make(
        "nccl-reported-bandwidth", Severity::info,
        fmt::format("A benchmark's own output reports bus bandwidth {:.1f} GB/s{}: not an nccl-tests table, so "
                    "nothing here names the hardware to judge it by",
                    best,
                    log.reported_ranks > 0
                        ? fmt::format(" over {} ranks{}", log.reported_ranks,
                                      across_nodes ? " (more than one 8-GPU node: the ring crosses the network)" : "")
                        : ""),
        {{"busbw_gbps", fmt::format("{:.2f}", best)}, {"ranks", std::to_string(log.reported_ranks)}},
        "Compare with the path: between GPU servers ≈46–48 GB/s busbw per 400 Gb/s RDMA NIC through NCCL and "
        "≈11–12 per 100 Gb/s (nccl-tests#290), 370–396 GB/s with the 8 NICs of an HGX node; within an NVSwitch node "
        "≈370 GB/s (H100). Far less between servers is TCP (NET/Socket) or the cloud's default network instead of its "
        "GPU fabric (EFA, GPUDirect-TCPX/TCPXO, InfiniBand): run nccl-tests with NCCL_DEBUG=INFO to see the transport "
        "and `gpusqueeze nccl analyze` its log"));
  }
  if (!log.rows.empty()) {
    const auto& last = log.rows.back();
    const bool stopped = !log.avg_busbw && log.max_bytes > 0 && last.bytes < log.max_bytes;
    if (stopped)  // a pasted table is often cut short: only the log's own errors make this fatal
      out.push_back(
          make("nccl-tests-stopped", Severity::info,
               fmt::format("The table ends at {} B of the {} B asked for, without nccl-tests' summary: the "
                           "run stopped there (a hang or crash) or the paste is cut",
                           last.bytes, log.max_bytes),
               {{"last_size", std::to_string(last.bytes)}, {"max_bytes", std::to_string(log.max_bytes)}},
               "If it stopped: re-run that size alone with NCCL_DEBUG=INFO (NCCL_DEBUG_SUBSYS=INIT,NET) to see "
               "where; a hang at the first large size often means P2P or the network path fails only once "
               "data flows (test NCCL_P2P_DISABLE=1, NCCL_IB_DISABLE=1 one at a time)"));
    uint64_t top = 0;
    for (const auto& r : log.rows) top = std::max(top, r.bytes);
    const auto peak = std::max_element(log.rows.begin(), log.rows.end(),
                                       [](const auto& a, const auto& b) { return a.best_busbw() < b.best_busbw(); });
    if (top < (64ULL << 20) && !stopped)
      out.push_back(make("nccl-tests-small-sweep", Severity::info,
                         fmt::format("The sweep ends at {} B: its peak ({:.2f} GB/s) measures latency, not the link",
                                     top, peak->best_busbw()),
                         {{"max_size", std::to_string(top)}},
                         "Run up to at least 1 GiB (-b 8 -e 8G -f 2) for the bus bandwidth"));
    if (const auto exp = expected_busbw(log);
        exp && top >= exp->judge_from_bytes && log.test.find("sendrecv") == std::string::npos &&
        log.test.find("alltoall") == std::string::npos && log.devices.size() != 1) {
      // The bandwidth of the large sizes (the best of the sizes from where the hardware's busbw is flat on).
      double large = 0;
      for (const auto& r : log.rows)
        if (r.bytes >= exp->judge_from_bytes) large = std::max(large, r.best_busbw());
      if (large < exp->low)
        out.push_back(
            make("nccl-tests-low-bandwidth", Severity::warn,
                 fmt::format("Bus bandwidth {:.1f} GB/s on large messages, {:.0f}% of the ≈{:.0f} GB/s {} gives", large,
                             100 * large / exp->typical, exp->typical, exp->hardware),
                 {{"busbw_gbps", fmt::format("{:.2f}", large)},
                  {"expected_gbps", fmt::format("{:.0f}", exp->typical)},
                  {"hardware", exp->hardware},
                  {"expectation_source", exp->source}},
                 "Find the slow path: NCCL_DEBUG=INFO shows the transport per channel (P2P/NVLS within a node, "
                 "NET/IB/…/GDRDMA between nodes; SHM or NET/Socket mean a fallback); check NVLink state "
                 "(nvidia-smi nvlink -s), ACS/IOMMU (gpusqueeze topo), NIC count and NCCL_IB_HCA"));
      else if (large > 0 && exp->known)
        out.push_back(
            make("nccl-tests-bandwidth", Severity::pass,
                 fmt::format("Bus bandwidth {:.1f} GB/s on large messages: as expected for {} (≈{:.0f})", large,
                             exp->hardware, exp->typical),
                 {{"busbw_gbps", fmt::format("{:.2f}", large)}, {"expected_gbps", fmt::format("{:.0f}", exp->typical)}},
                 ""));
    }
    // A cliff: from some size ≥ 1 MiB on, every size stays below 60% of the best smaller size.
    double best = 0;
    for (size_t i = 0; i < log.rows.size(); ++i) {
      const auto& r = log.rows[i];
      if (r.bytes < (1ULL << 20)) continue;
      if (best > 1.0 && r.best_busbw() < 0.6 * best) {
        bool recovers = false;
        for (size_t j = i + 1; j < log.rows.size(); ++j) recovers |= log.rows[j].best_busbw() >= 0.8 * best;
        if (!recovers || i + 1 == log.rows.size()) {
          out.push_back(
              make("nccl-tests-cliff", Severity::warn,
                   fmt::format("Bus bandwidth falls from {:.1f} to {:.1f} GB/s at {} B and does not recover", best,
                               r.best_busbw(), r.bytes),
                   {{"size", std::to_string(r.bytes)},
                    {"busbw_gbps", fmt::format("{:.2f}", r.best_busbw())},
                    {"best_before_gbps", fmt::format("{:.2f}", best)}},
                   "A protocol or algorithm switch at that size (NCCL_DEBUG_SUBSYS=TUNING shows NCCL's choice "
                   "per size), or a buffer that no longer fits (NVLS/registration, NCCL_BUFFSIZE); compare "
                   "NCCL_ALGO=Ring and NCCL_PROTO=Simple around it"));
          break;
        }
        out.push_back(make("nccl-tests-dip", Severity::info,
                           fmt::format("Bus bandwidth dips to {:.1f} GB/s at {} B (best before {:.1f}) and recovers",
                                       r.best_busbw(), r.bytes, best),
                           {{"size", std::to_string(r.bytes)}},
                           "Usually an algorithm/protocol switch point; check "
                           "NCCL_DEBUG_SUBSYS=TUNING if that size matters to you"));
        break;
      }
      best = std::max(best, r.best_busbw());
    }
  }
}

// What the INFO lines say of the job, and WARN lines the catalogue does not know when nothing above warned.
void init_findings(const NcclLog& log, std::vector<Finding>& out) {
  // What the INFO lines say of the job, when nothing above did.
  if (!log.nccl_version.empty() || log.init_complete > 0 || !log.graphs.empty()) {
    std::vector<Evidence> ev;
    if (!log.nccl_version.empty()) ev.push_back({"nccl_version", log.nccl_version});
    if (log.nranks > 0) ev.push_back({"nranks", std::to_string(log.nranks)});
    if (log.nnodes > 0) ev.push_back({"nnodes", std::to_string(log.nnodes)});
    if (!log.network.empty()) ev.push_back({"network", log.network});
    std::string transports;
    for (const auto& [t, n] : log.transports) transports += (transports.empty() ? "" : ", ") + t;
    if (!transports.empty()) ev.push_back({"transports", transports});
    if (log.coll_channels > 0) ev.push_back({"coll_channels", std::to_string(log.coll_channels)});
    if (log.nvls_channels > 0 || log.nvls)
      ev.push_back({"nvls", log.nvls_channels > 0 ? std::to_string(log.nvls_channels) + " channels" : "yes"});
    for (const auto& g : log.graphs) {
      static const char* names[] = {"?", "balanced tree", "split tree", "tree", "ring", "NVLS", "CollNet direct"};
      ev.push_back({fmt::format("graph_{}", g.pattern >= 0 && g.pattern <= 6 ? names[g.pattern] : "?"),
                    fmt::format("{} channels, {:.1f}/{:.1f} GB/s per channel, type {}{}", g.channels, g.bw_intra,
                                g.bw_inter, g.type, g.crossnic > 0 ? ", crossNic" : "")});
      if (ev.size() > 14) break;
    }
    if (log.init_complete > 0) ev.push_back({"init_complete_lines", std::to_string(log.init_complete)});
    out.push_back(
        make("nccl-init", Severity::info,
             fmt::format("NCCL {}{}{}{}", log.nccl_version.empty() ? "(version not in the log)" : log.nccl_version,
                         log.nranks > 0 ? fmt::format(", {} ranks", log.nranks) : "",
                         log.nnodes > 0 ? fmt::format(" on {} node{}", log.nnodes, log.nnodes > 1 ? "s" : "") : "",
                         transports.empty() ? "" : ", via " + transports),
             ev, ""));
  }
  // The program's own word for a failure, where nothing above failed: a script's check, a test harness.
  if (!log.failure_reports.empty() &&
      std::none_of(out.begin(), out.end(), [](const Finding& f) { return f.severity == Severity::fail; }))
    out.push_back(
        make("nccl-failure-reported", Severity::fail,
             fmt::format("The log reports a failure in its own words: \"{}\"", log.failure_reports.front()),
             {{"line", log.failure_reports.front()}},
             "Read what failed just above that line (a check's expected and actual values, the rank); for "
             "wrong collective results, run nccl-tests with -c 1 on the same GPUs and test NCCL_P2P_DISABLE=1 "
             "and NCCL_NVLS_ENABLE=0 one at a time"));
  // The node's own tools: NVLinks DCGM sees down, its diagnostic's failed checks, a row remap waiting for a reset.
  {
    std::set<int> down, partly;
    for (const auto& [gpu, st] : log.nvlink_states) {
      const auto n_down = std::count(st.begin(), st.end(), 'D'), n_up = std::count(st.begin(), st.end(), 'U');
      if (n_down > 0) (n_up > 0 ? partly : down).insert(gpu);
    }
    if (!down.empty() || !partly.empty())
      out.push_back(make(
          "nccl-nvlink-down", Severity::warn,
          fmt::format(
              "DCGM sees NVLinks down: {}{}{}",
              down.empty() ? "" : (down.size() == 1 ? "every link of GPU " : "every link of GPUs ") + ranks_text(down),
              !down.empty() && !partly.empty() ? "; " : "",
              partly.empty()
                  ? ""
                  : (partly.size() == 1 ? "some links of GPU " : "some links of GPUs ") + ranks_text(partly)),
          {{"gpus_all_down", ranks_text(down)}, {"gpus_some_down", ranks_text(partly)}},
          "Traffic between these GPUs goes over PCIe (or fails where NVLink is required): nvidia-smi nvlink -s and "
          "nvidia-smi topo -m for what the driver sees; on an NVSwitch system nvidia-fabricmanager must be running; "
          "on NVLink-bridged cards (H100 NVL pairs) reseat or check the bridge. A passing `dcgmi diag -r 2` does not "
          "test the links' state"));
  }
  if (!log.dcgm_failed.empty())
    out.push_back(make("nccl-dcgm-diag-failed", Severity::fail,
                       fmt::format("DCGM's diagnostic failed {} check{}: {}", log.dcgm_failed.size(),
                                   log.dcgm_failed.size() == 1 ? "" : "s", log.dcgm_failed.front()),
                       {{"failed_checks", std::to_string(log.dcgm_failed.size())}},
                       "Drain the node and run dcgmi diag -r 3 (or 4) again; a failing memory, PCIe or NVLink check "
                       "with Xid errors in dmesg is hardware for the vendor"));
  if (log.remap_failed == 1 || log.remap_pending == 1)
    out.push_back(make(
        "nccl-row-remap", log.remap_failed == 1 ? Severity::fail : Severity::warn,
        log.remap_failed == 1
            ? "The GPU could not remap a row after uncorrectable memory errors (Remapping Failure Occurred: Yes)"
            : fmt::format("A row remap is pending{}: the GPU's memory had uncorrectable errors and the remap takes "
                          "effect only after a GPU reset",
                          log.remap_uncorrectable > 0
                              ? fmt::format(" ({} uncorrectable error{})", log.remap_uncorrectable,
                                            log.remap_uncorrectable == 1 ? "" : "s")
                              : ""),
        {{"pending", log.remap_pending == 1 ? "Yes" : "No"}, {"failed", log.remap_failed == 1 ? "Yes" : "No"}},
        log.remap_failed == 1 ? "The GPU is out of spare rows: drain the node and have the GPU replaced"
                              : "Drain the node, reset the GPU (nvidia-smi -r, or reboot) so the remap takes effect, "
                                "and check that Pending reads No afterwards; repeated remaps point to a failing GPU"));
  // DDP built with find_unused_parameters=True finding none unused (reducer.cpp's warning): harmless, the flag costs
  // a traversal of the autograd graph every step.
  if (log.ddp_unused_flag)
    out.push_back(make("nccl-ddp-unused-parameters", Severity::info,
                       "DDP was built with find_unused_parameters=True and found no unused parameter: harmless, but "
                       "every step pays an extra traversal of the autograd graph",
                       {},
                       "Pass find_unused_parameters=False to DistributedDataParallel (keep True only for a model "
                       "whose forward really skips parameters on some steps)"));
  // A job's own output (lines its launcher tagged with their ranks, PyTorch's distributed warnings) and nothing above:
  // read, and nothing wrong in it.
  if (out.empty() && (log.tagged_lines > 0 || log.torch_warnings > 0))
    out.push_back(make(
        "nccl-job-output", Severity::info,
        fmt::format("A distributed job's output ({} line{} tagged by its launcher{}): no NCCL line, collective "
                    "timeout, error or failure in it",
                    log.tagged_lines, log.tagged_lines == 1 ? "" : "s",
                    log.ranks_seen.empty()       ? ""
                    : log.ranks_seen.size() == 1 ? ", rank " + ranks_text(log.ranks_seen)
                                                 : ", ranks " + ranks_text(log.ranks_seen)),
        {{"tagged_lines", std::to_string(log.tagged_lines)}, {"torch_warnings", std::to_string(log.torch_warnings)}},
        "Nothing to fix in these lines. For NCCL's side of the job, run with NCCL_DEBUG=INFO (init, transports, "
        "channels); for a hang, TORCH_NCCL_TRACE_BUFFER_SIZE=2000 and TORCH_NCCL_DUMP_ON_TIMEOUT=1 keep a Flight "
        "Recorder dump that `gpusqueeze nccl analyze` reads"));
  if (log.unknown_warn_lines > 0 &&
      std::none_of(out.begin(), out.end(), [](const Finding& f) { return f.severity >= Severity::warn; }))
    out.push_back(make("nccl-warn", Severity::warn,
                       fmt::format("NCCL printed {} WARN line{} that the catalogue does not know",
                                   log.unknown_warn_lines, log.unknown_warn_lines > 1 ? "s" : ""),
                       {{"first", log.warnings.front()}},
                       "Read the WARN line; NCCL_DEBUG=INFO around it tells which step of init or which transport"));
}

}  // namespace

std::vector<Finding> nccl_findings(const NcclLog& log) {
  std::vector<Finding> out;
  watchdog_findings(log, out);
  rank_findings(log, out);
  catalogue_findings(log, out);
  transport_findings(log, out);
  env_findings(log, out);
  nccl_tests_findings(log, out);
  init_findings(log, out);
  return out;
}

}  // namespace gsq::topo
