#include "sched/launch.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "core/error.h"

namespace mcinfer::sched {
namespace {

// A launcher's word for rank and world, before the flags are weighed against it.
struct Candidate {
  int rank = 0;
  int world = 1;
  std::optional<int> local_rank, local_size;
  std::string source;
  std::string variables;  // "OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=3", for messages
  bool mpi = false;
};

int parse_count(std::string_view name, const std::string& value) {
  if (value.empty() || value.size() > 9 ||
      value.find_first_not_of("0123456789") != std::string::npos)
    fail_usage("{}={}: not a non-negative integer", name, value);
  return std::stoi(value);
}

class Reader {
 public:
  explicit Reader(const EnvLookup& env) : env_(env) {}

  std::optional<std::string> get(std::string_view name) const { return env_(name); }

  // A launcher's variables: rank and size (both or neither), and on this host, when it says.
  struct Names {
    std::string_view rank, size, local_rank, local_size;
  };

  // The rank/size pair of `names` when either is set; both must be.
  std::optional<Candidate> pair(const Names& names, std::string source, bool mpi) const {
    const std::string_view rank_var = names.rank, size_var = names.size;
    const auto rank = env_(rank_var), size = env_(size_var);
    if (!rank && !size) return std::nullopt;
    if (!rank || !size) {
      fail_usage(
          "{} is set but {} is not: incomplete {} launch; set both, or give --rank and "
          "--world",
          rank ? rank_var : size_var, rank ? size_var : rank_var, source);
    }
    Candidate c;
    c.rank = parse_count(rank_var, *rank);
    c.world = parse_count(size_var, *size);
    c.source = std::move(source);
    c.variables = fmt::format("{}={}, {}={}", rank_var, *rank, size_var, *size);
    c.mpi = mpi;
    if (auto local = env_(names.local_rank)) c.local_rank = parse_count(names.local_rank, *local);
    if (!names.local_size.empty()) {
      if (auto local = env_(names.local_size)) c.local_size = parse_count(names.local_size, *local);
    }
    check(c);
    return c;
  }

  // SLURM_ARRAY_TASK_ID among the array's tasks: rank = (id - min) / step, world = count.
  std::optional<Candidate> slurm_array() const {
    const auto id = env_("SLURM_ARRAY_TASK_ID");
    if (!id) return std::nullopt;
    const auto count = env_("SLURM_ARRAY_TASK_COUNT"), min = env_("SLURM_ARRAY_TASK_MIN");
    if (!count || !min) {
      fail_usage(
          "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_{} is not: incomplete Slurm "
          "job array; give --rank and --world",
          count ? "MIN" : "COUNT");
    }
    const int task = parse_count("SLURM_ARRAY_TASK_ID", *id);
    const int first = parse_count("SLURM_ARRAY_TASK_MIN", *min);
    const auto step_text = env_("SLURM_ARRAY_TASK_STEP");
    const int step = step_text ? parse_count("SLURM_ARRAY_TASK_STEP", *step_text) : 1;
    Candidate c;
    c.world = parse_count("SLURM_ARRAY_TASK_COUNT", *count);
    c.source = "Slurm job array";
    c.variables = fmt::format("SLURM_ARRAY_TASK_ID={}, _MIN={}, _COUNT={}{}", *id, *min, *count,
                              step_text ? ", _STEP=" + *step_text : "");
    if (step < 1 || task < first || (task - first) % step != 0) {
      fail_usage(
          "{}: the task ids are not min + k × step, so the rank cannot be derived; give "
          "--rank and --world",
          c.variables);
    }
    c.rank = (task - first) / step;
    check(c);
    return c;
  }

  static void check(const Candidate& c) {
    if (c.world < 1) fail_usage("{}: a world of {} ranks", c.variables, c.world);
    if (c.rank >= c.world)
      fail_usage("{}: rank {} is not below the world size {}", c.variables, c.rank, c.world);
  }

 private:
  const EnvLookup& env_;
};

// SLURM_STEP_TASKS_PER_NODE when every node runs the same number of tasks ("3", "2(x4)"), else
// nullopt ("2(x3),1": this node's count is not said).
std::optional<int> slurm_tasks_on_each_node(const std::optional<std::string>& value) {
  if (!value) return std::nullopt;
  const std::string& v = *value;
  const std::size_t digits = v.find_first_not_of("0123456789");
  if (digits == 0) return std::nullopt;
  const std::string count = v.substr(0, digits);
  if (digits != std::string::npos) {
    const std::string rest = v.substr(digits);
    if (rest.size() < 4 || rest.rfind("(x", 0) != 0 || rest.back() != ')' ||
        rest.find_first_not_of("0123456789", 2) != rest.size() - 1)
      return std::nullopt;
  }
  return parse_count("SLURM_STEP_TASKS_PER_NODE", count);
}

// The first launcher present, in the documented order. Inner launchers come first: mpirun run
// inside a Slurm allocation leaves the allocation's SLURM_* variables in every rank's
// environment, and the MPI variables are the ones that tell the ranks apart.
std::optional<Candidate> find_launcher(const Reader& env, std::optional<int> world_flag) {
  if (auto c = env.pair({"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
                        "Open MPI", true))
    return c;
  if (auto c = env.pair({"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}, "MPICH/PMI",
                        true))
    return c;
  // srun sets SLURM_STEP_ID; a batch script (sbatch --ntasks=3 without srun: one process)
  // has SLURM_NTASKS and SLURM_PROCID=0 but no step. A step of one task is also what an array
  // task's srun runs in: only a step of several tasks splits the work.
  const auto ntasks = env.get("SLURM_NTASKS");
  if (env.get("SLURM_STEP_ID") && ntasks && parse_count("SLURM_NTASKS", *ntasks) > 1) {
    // Slurm says how many tasks each node runs in its own notation, not as one count.
    auto c = env.pair({"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""}, "Slurm step", false);
    c->local_size = slurm_tasks_on_each_node(env.get("SLURM_STEP_TASKS_PER_NODE"));
    // srun with an MPI plugin (PMIx or PMI2) lets the ranks join through MPI.
    c->mpi = env.get("PMIX_RANK").has_value() || env.get("PMI_FD").has_value();
    return c;
  }
  if (auto c = env.slurm_array()) return c;
  if (auto index = env.get("JOB_COMPLETION_INDEX")) {
    Candidate c;
    c.rank = parse_count("JOB_COMPLETION_INDEX", *index);
    c.source = "Kubernetes Indexed Job";
    c.variables = "JOB_COMPLETION_INDEX=" + *index;
    if (!world_flag) {
      fail_usage(
          "{}: a Kubernetes Indexed Job gives the rank but not the world; add --world N "
          "(the Job's completions)",
          c.variables);
    }
    c.world = *world_flag;
    Reader::check(c);
    return c;
  }
  return env.pair({"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}, "torchrun", false);
}

}  // namespace

int RankInfo::replica_slots(int host_slots) const {
  if (!local_size || *local_size <= 1) return host_slots;
  return std::max(1, host_slots / *local_size);
}

std::string RankInfo::describe() const {
  return fmt::format("rank {} of {} ({})", rank, world, source);
}

EnvLookup process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

RankInfo detect_rank(const EnvLookup& env, std::optional<int> rank_flag,
                     std::optional<int> world_flag) {
  if (world_flag && *world_flag < 1) fail_usage("--world must be at least 1, not {}", *world_flag);
  if (rank_flag && *rank_flag < 0) fail_usage("--rank must be at least 0, not {}", *rank_flag);
  if (rank_flag && !world_flag) fail_usage("--rank {} needs --world", *rank_flag);
  const Reader reader(env);
  const std::optional<Candidate> launcher = find_launcher(reader, world_flag);
  RankInfo info;
  if (launcher) {
    if ((rank_flag && *rank_flag != launcher->rank) ||
        (world_flag && *world_flag != launcher->world)) {
      fail_usage("--rank/--world say rank {} of {}, but the {} launcher says rank {} of {} ({})",
                 rank_flag ? fmt::to_string(*rank_flag) : "?", *world_flag, launcher->source,
                 launcher->rank, launcher->world, launcher->variables);
    }
    info.rank = launcher->rank;
    info.world = launcher->world;
    info.local_rank = launcher->local_rank;
    info.local_size = launcher->local_size;
    info.source = launcher->source;
    info.mpi_launcher = launcher->mpi;
    return info;
  }
  if (world_flag && !rank_flag) {
    if (*world_flag == 1) return info;
    fail_usage("--world {} needs --rank (no launcher's variables were found)", *world_flag);
  }
  if (rank_flag) {
    if (*rank_flag >= *world_flag)
      fail_usage("--rank {} is not below --world {}", *rank_flag, *world_flag);
    info.rank = *rank_flag;
    info.world = *world_flag;
    info.source = "--rank/--world";
  }
  return info;
}

}  // namespace mcinfer::sched
