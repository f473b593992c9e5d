// mcinfer._core: the public C++ API (include/mcinfer/) for Python. The computation runs on the
// engine's threads with the GIL released; the calling thread wakes every 50 ms to deliver
// signals (Ctrl-C stops the call after the batches in flight) and to report progress.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <mcinfer/mcinfer.h>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <thread>

#include "cli.h"
#include "options.h"
#include "text_column.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace mcinfer::python {
namespace {

// Runs `work` on a thread of its own; the caller's thread, GIL released, wakes every 50 ms to
// run Python's signal handlers and `tick` (progress). A handler's exception (KeyboardInterrupt)
// or tick's sets `stop`, waits for `work` to end and is raised; else work's result or exception.
template <typename Result>
Result run_interruptibly(std::function<Result()> work, std::atomic<bool>& stop,
                         const std::function<void()>& tick) {
  std::packaged_task<Result()> task(std::move(work));
  std::future<Result> done = task.get_future();
  std::optional<nb::python_error> interrupted;
  {
    nb::gil_scoped_release release;
    std::thread thread(std::move(task));
    while (done.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
      nb::gil_scoped_acquire acquire;
      if (interrupted) continue;  // stopping: the batches in flight finish
      try {
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
        if (tick) tick();
      } catch (nb::python_error& e) {
        interrupted.emplace(std::move(e));
        stop = true;
      }
    }
    thread.join();
  }
  if (interrupted) {
    try {
      done.get();
    } catch (const std::exception&) {  // StoppedError, or a failure the stop raced with
    }
    throw std::move(*interrupted);
  }
  if (tick) tick();
  return done.get();
}

// A float32 [rows, cols] numpy array that owns `values` (no copy).
nb::ndarray<nb::numpy, float, nb::ndim<2>> to_numpy(Matrix&& m) {
  auto* values = new std::vector<float>(std::move(m.values));
  nb::capsule owner(values, [](void* p) noexcept { delete static_cast<std::vector<float>*>(p); });
  return nb::ndarray<nb::numpy, float, nb::ndim<2>>(values->data(), {m.rows, m.cols}, owner);
}

// A TextColumn given, or one read from any other object.
const TextColumn& column_of(nb::handle source, const char* what, std::optional<TextColumn>& made) {
  if (nb::isinstance<TextColumn>(source)) return *nb::cast<TextColumn*>(source);
  return made.emplace(TextColumn::from_python(source, what));
}

struct PredictArgs {
  std::optional<std::string> prompt, prompt_name;
  std::int64_t batch_tokens = 4096;
  std::size_t batch_rows = 0;
  nb::object progress;  // called with the rows done so far; None: no progress
};

nb::ndarray<nb::numpy, float, nb::ndim<2>> predict(const Model& model, nb::handle texts,
                                                   nb::handle pairs, const PredictArgs& args) {
  std::optional<TextColumn> made_texts, made_pairs;
  const TextColumn& text_column = column_of(texts, "texts", made_texts);
  const TextColumn* pair_column = nullptr;
  if (!pairs.is_none()) pair_column = &column_of(pairs, "pairs", made_pairs);
  if (pair_column != nullptr && pair_column->size() != text_column.size())
    throw nb::value_error(("texts has " + std::to_string(text_column.size()) + " rows but pairs " +
                           std::to_string(pair_column->size()))
                              .c_str());
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> rows_done{0};
  PredictOptions options{.prompt = args.prompt,
                         .prompt_name = args.prompt_name,
                         .batch_tokens = args.batch_tokens,
                         .batch_rows = args.batch_rows,
                         .stop = &stop,
                         .rows_done = &rows_done};
  std::function<void()> tick;
  if (!args.progress.is_none()) tick = [&] { args.progress(rows_done.load()); };
  Matrix m = run_interruptibly<Matrix>(
      [&] {
        return model.predict(text_column.views(),
                             pair_column ? std::span<const std::string_view>(pair_column->views())
                                         : std::span<const std::string_view>(),
                             options);
      },
      stop, tick);
  return to_numpy(std::move(m));
}

std::string run_job(const nb::dict& options) {
  RunOptions o = run_options_from(options);
  std::atomic<bool> stop{false};
  o.stop = &stop;
  return run_interruptibly<std::string>([&] { return mcinfer::run(o); }, stop, {});
}

int cli_main(const std::vector<std::string>& args) {
  std::vector<std::string> owned = args;
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  nb::gil_scoped_release release;
  return cli::run_as_process(static_cast<int>(owned.size()), argv.data());
}

Model load(const std::filesystem::path& dir, const nb::dict& given) {
  const ModelOptions options = model_options_from(given);
  nb::gil_scoped_release release;
  return Model::load(dir, options);
}

}  // namespace
}  // namespace mcinfer::python

NB_MODULE(_core, m) {
  using namespace mcinfer;
  using namespace mcinfer::python;
  m.doc() = "mcinfer's engine (the public C++ API); use the mcinfer package, not this module";
  // The package's version, known at build time: importlib.metadata would cost every import
  // ~4 MiB resident and its import time (measured: numpy alone 24.2 MiB, with it 28.1 MiB).
  m.attr("__version__") = MCINFER_VERSION;
  // Base classes first: a translator registered later is tried first.
  nb::exception<Error> error(m, "Error", PyExc_RuntimeError);
  nb::exception<UsageError>(m, "UsageError", error.ptr());
  nb::exception<PrecisionCheckError>(m, "PrecisionCheckError", error.ptr());
  nb::exception<StoppedError>(m, "StoppedError", error.ptr());

  nb::class_<TextColumn>(m, "TextColumn")
      .def_static("from_fixed_width", &TextColumn::from_fixed_width, "data"_a, "count"_a, "width"_a)
      .def("__len__", &TextColumn::size);

  nb::class_<Model>(m, "Model")
      .def_static("load", &load, "model_dir"_a, "options"_a)
      .def_prop_ro("backend", &Model::backend)
      .def_prop_ro("precision", &Model::precision)
      .def_prop_ro("precision_report", &Model::precision_report)
      .def_prop_ro("task", &Model::task)
      .def_prop_ro("replicas", &Model::replicas)
      .def_prop_ro("max_len", &Model::max_len)
      .def_prop_ro("columns", &Model::columns)
      .def(
          "predict",
          [](const Model& model, nb::handle texts, nb::handle pairs,
             std::optional<std::string> prompt, std::optional<std::string> prompt_name,
             std::int64_t batch_tokens, std::size_t batch_rows, nb::object progress) {
            return predict(model, texts, pairs,
                           {prompt, prompt_name, batch_tokens, batch_rows, progress});
          },
          "texts"_a, "pairs"_a.none(), "prompt"_a.none(), "prompt_name"_a.none(), "batch_tokens"_a,
          "batch_rows"_a, "progress"_a.none());

  m.def("run", &run_job, "options"_a);
  m.def("cli_main", &cli_main, "argv"_a);
  m.def("run_flag_choices", &run_flag_choices, "flag"_a);
  m.def("option_table", &option_table_for_python);
  m.def("parsed_run_options", &parsed_run_options, "options"_a);
  m.def("parsed_model_options", &parsed_model_options, "options"_a);
  m.def("parsed_cli_run_options", &parsed_cli_run_options, "args"_a);
}
