#include "backends/pjrt/stablehlo.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.h"

namespace mcinfer::pjrt {
namespace {

std::string list(const Dims& dims) { return fmt::format("{}", fmt::join(dims, ", ")); }

void expect(bool condition, std::string_view op, const Value& a) {
  if (!condition)
    fail("internal: StableHLO {}: operand {} {} does not fit", op, a.name, a.tensor_type());
}

bool is_float(DType type) { return type == DType::kF32 || type == DType::kBf16; }

}  // namespace

std::string Value::tensor_type() const {
  std::string text = "tensor<";
  for (std::int64_t d : dims) text += fmt::format("{}x", d);
  text += kMlirTypeNames.name(type);
  return text + ">";
}

Value Program::next(Dims dims, DType type) {
  return Value{fmt::format("%v{}", counter_++), std::move(dims), type};
}

Value Program::parameter(Dims dims, DType type) {
  Value v{fmt::format("%arg{}", parameters_.size()), std::move(dims), type};
  parameters_.push_back(v);
  return v;
}

Value Program::splat(float value, const Dims& dims, DType type) {
  Value v = next(dims, type);
  std::string literal;
  if (type == DType::kF32) {
    literal = fmt::format("0x{:08X}", std::bit_cast<std::uint32_t>(value));
  } else if (type == DType::kBf16) {
    literal = fmt::format("0x{:04X}", std::bit_cast<std::uint32_t>(value) >> 16);
  } else if (type == DType::kS32) {
    literal = fmt::format("{}", static_cast<std::int32_t>(value));
  } else {
    literal = value != 0 ? "true" : "false";
  }
  body_ +=
      fmt::format("    {} = stablehlo.constant dense<{}> : {}\n", v.name, literal, v.tensor_type());
  return v;
}

Value Program::constant(const std::vector<float>& values, const Dims& dims) {
  if (static_cast<std::int64_t>(values.size()) != elements(dims))
    fail("internal: StableHLO constant of {} values for {} elements", values.size(),
         elements(dims));
  Value v = next(dims, DType::kF32);
  std::string literal;
  for (std::size_t i = 0; i < values.size(); ++i)
    literal += fmt::format("{}0x{:08X}", i ? ", " : "", std::bit_cast<std::uint32_t>(values[i]));
  body_ += fmt::format("    {} = stablehlo.constant dense<[{}]> : {}\n", v.name, literal,
                       v.tensor_type());
  return v;
}

Value Program::binary(std::string_view op, const Value& a, const Value& b) {
  expect(a.dims == b.dims && a.type == b.type, op, b);
  Value v = next(a.dims, a.type);
  body_ += fmt::format("    {} = stablehlo.{} {}, {} : {}\n", v.name, op, a.name, b.name,
                       v.tensor_type());
  return v;
}

Value Program::unary(std::string_view op, const Value& a) {
  expect(is_float(a.type), op, a);
  Value v = next(a.dims, a.type);
  if (op == "erf") {
    body_ += fmt::format("    {} = chlo.erf {} : {} -> {}\n", v.name, a.name, a.tensor_type(),
                         v.tensor_type());
  } else {
    body_ += fmt::format("    {} = stablehlo.{} {} : {}\n", v.name, op, a.name, v.tensor_type());
  }
  return v;
}

Value Program::convert(const Value& a, DType type) {
  if (a.type == type) return a;
  Value v = next(a.dims, type);
  body_ += fmt::format("    {} = stablehlo.convert {} : ({}) -> {}\n", v.name, a.name,
                       a.tensor_type(), v.tensor_type());
  return v;
}

Value Program::broadcast(const Value& a, const Dims& dims, const Dims& mapping) {
  expect(mapping.size() == a.dims.size(), "broadcast_in_dim", a);
  for (std::size_t i = 0; i < mapping.size(); ++i) {
    expect(mapping[i] >= 0 && mapping[i] < static_cast<std::int64_t>(dims.size()) &&
               (a.dims[i] == 1 || a.dims[i] == dims[static_cast<std::size_t>(mapping[i])]),
           "broadcast_in_dim", a);
  }
  Value v = next(dims, a.type);
  body_ += fmt::format("    {} = stablehlo.broadcast_in_dim {}, dims = [{}] : ({}) -> {}\n", v.name,
                       a.name, list(mapping), a.tensor_type(), v.tensor_type());
  return v;
}

std::int64_t elements(const Dims& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

Value Program::reshape(const Value& a, const Dims& dims) {
  expect(elements(a.dims) == elements(dims), "reshape", a);
  Value v = next(dims, a.type);
  body_ += fmt::format("    {} = stablehlo.reshape {} : ({}) -> {}\n", v.name, a.name,
                       a.tensor_type(), v.tensor_type());
  return v;
}

Value Program::transpose(const Value& a, const Dims& permutation) {
  expect(permutation.size() == a.dims.size(), "transpose", a);
  Dims dims;
  for (std::int64_t p : permutation) dims.push_back(a.dims.at(static_cast<std::size_t>(p)));
  Value v = next(dims, a.type);
  body_ += fmt::format("    {} = stablehlo.transpose {}, dims = [{}] : ({}) -> {}\n", v.name,
                       a.name, list(permutation), a.tensor_type(), v.tensor_type());
  return v;
}

Value Program::slice(const Value& a, const Dims& start, const Dims& limit) {
  expect(start.size() == a.dims.size() && limit.size() == a.dims.size(), "slice", a);
  Dims dims;
  for (std::size_t i = 0; i < start.size(); ++i) {
    expect(0 <= start[i] && start[i] < limit[i] && limit[i] <= a.dims[i], "slice", a);
    dims.push_back(limit[i] - start[i]);
  }
  Value v = next(dims, a.type);
  std::string ranges;
  for (std::size_t i = 0; i < start.size(); ++i)
    ranges += fmt::format("{}{}:{}", i ? ", " : "", start[i], limit[i]);
  body_ += fmt::format("    {} = stablehlo.slice {} [{}] : ({}) -> {}\n", v.name, a.name, ranges,
                       a.tensor_type(), v.tensor_type());
  return v;
}

Value Program::pad(const Value& a, float value, const Dims& low, const Dims& high) {
  expect(low.size() == a.dims.size() && high.size() == a.dims.size(), "pad", a);
  Dims dims;
  for (std::size_t i = 0; i < low.size(); ++i) {
    expect(low[i] >= 0 && high[i] >= 0, "pad", a);
    dims.push_back(a.dims[i] + low[i] + high[i]);
  }
  const Value fill = splat(value, {}, a.type);
  Value v = next(dims, a.type);
  body_ += fmt::format(
      "    {} = stablehlo.pad {}, {}, low = [{}], high = [{}], interior = [{}] : ({}, {}) -> {}\n",
      v.name, a.name, fill.name, list(low), list(high), list(Dims(low.size(), 0)), a.tensor_type(),
      fill.tensor_type(), v.tensor_type());
  return v;
}

Value Program::concatenate(const std::vector<Value>& values, std::int64_t dimension) {
  expect(!values.empty(), "concatenate", Value{});
  const Value& first = values.front();
  const auto axis = static_cast<std::size_t>(dimension);
  expect(axis < first.dims.size(), "concatenate", first);
  Dims dims = first.dims;
  dims[axis] = 0;
  std::string names, types;
  for (const Value& v : values) {
    Dims others = v.dims, want = first.dims;
    expect(others.size() == want.size() && v.type == first.type, "concatenate", v);
    others[axis] = want[axis] = 0;
    expect(others == want, "concatenate", v);
    dims[axis] += v.dims[axis];
    names += (names.empty() ? "" : ", ") + v.name;
    types += (types.empty() ? "" : ", ") + v.tensor_type();
  }
  Value v = next(dims, first.type);
  body_ += fmt::format("    {} = stablehlo.concatenate {}, dim = {} : ({}) -> {}\n", v.name, names,
                       dimension, types, v.tensor_type());
  return v;
}

Value Program::iota(const Dims& dims, std::int64_t dimension, DType type) {
  Value v = next(dims, type);
  body_ +=
      fmt::format("    {} = stablehlo.iota dim = {} : {}\n", v.name, dimension, v.tensor_type());
  return v;
}

Value Program::compare(std::string_view direction, const Value& a, const Value& b) {
  expect(a.dims == b.dims && a.type == b.type, "compare", b);
  Value v = next(a.dims, DType::kPred);
  body_ += fmt::format("    {} = stablehlo.compare {}, {}, {}, {} : ({}, {}) -> {}\n", v.name,
                       direction, a.name, b.name, is_float(a.type) ? "FLOAT" : "SIGNED",
                       a.tensor_type(), b.tensor_type(), v.tensor_type());
  return v;
}

Value Program::select(const Value& predicate, const Value& on_true, const Value& on_false) {
  expect(predicate.type == DType::kPred && predicate.dims == on_true.dims, "select", predicate);
  expect(on_true.dims == on_false.dims && on_true.type == on_false.type, "select", on_false);
  Value v = next(on_true.dims, on_true.type);
  body_ += fmt::format("    {} = stablehlo.select {}, {}, {} : {}, {}\n", v.name, predicate.name,
                       on_true.name, on_false.name, predicate.tensor_type(), v.tensor_type());
  return v;
}

Value Program::reduce(const Value& a, std::string_view op, const Dims& dimensions) {
  const float init = op == "maximum" ? -std::numeric_limits<float>::infinity() : 0.0f;
  Value start = splat(init, {}, a.type);
  Dims dims;
  for (std::size_t i = 0; i < a.dims.size(); ++i) {
    if (std::find(dimensions.begin(), dimensions.end(), static_cast<std::int64_t>(i)) ==
        dimensions.end())
      dims.push_back(a.dims[i]);
  }
  Value v = next(dims, a.type);
  body_ += fmt::format(
      "    {} = stablehlo.reduce({} init: {}) applies stablehlo.{} across dimensions = [{}] : "
      "({}, {}) -> {}\n",
      v.name, a.name, start.name, op, list(dimensions), a.tensor_type(), start.tensor_type(),
      v.tensor_type());
  return v;
}

Value Program::dot(const Value& a, const Value& b, const Dims& batch_a, const Dims& batch_b,
                   const Dims& contract_a, const Dims& contract_b, DType result) {
  expect(batch_a.size() == batch_b.size() && contract_a.size() == contract_b.size(), "dot", b);
  expect(a.type == b.type, "dot", b);
  Dims dims;
  for (std::size_t i = 0; i < batch_a.size(); ++i) {
    const auto da = a.dims.at(static_cast<std::size_t>(batch_a[i]));
    expect(da == b.dims.at(static_cast<std::size_t>(batch_b[i])), "dot", b);
    dims.push_back(da);
  }
  for (std::size_t i = 0; i < contract_a.size(); ++i) {
    expect(a.dims.at(static_cast<std::size_t>(contract_a[i])) ==
               b.dims.at(static_cast<std::size_t>(contract_b[i])),
           "dot", b);
  }
  auto free_dims = [&](const Value& x, const Dims& batch, const Dims& contract) {
    for (std::size_t i = 0; i < x.dims.size(); ++i) {
      const auto d = static_cast<std::int64_t>(i);
      if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
          std::find(contract.begin(), contract.end(), d) == contract.end())
        dims.push_back(x.dims[i]);
    }
  };
  free_dims(a, batch_a, contract_a);
  free_dims(b, batch_b, contract_b);
  Value v = next(dims, result);
  std::string batching;
  if (!batch_a.empty())
    batching = fmt::format("batching_dims = [{}] x [{}], ", list(batch_a), list(batch_b));
  body_ += fmt::format(
      "    {} = stablehlo.dot_general {}, {}, {}contracting_dims = [{}] x [{}], precision = "
      "[DEFAULT, DEFAULT] : ({}, {}) -> {}\n",
      v.name, a.name, b.name, batching, list(contract_a), list(contract_b), a.tensor_type(),
      b.tensor_type(), v.tensor_type());
  return v;
}

Value Program::gather_rows(const Value& table, const Value& indices) {
  expect(table.dims.size() == 2 && indices.type == DType::kS32, "gather", indices);
  Dims dims = indices.dims;
  dims.push_back(table.dims[1]);
  Value v = next(dims, table.type);
  const auto rank = static_cast<std::int64_t>(indices.dims.size());
  body_ += fmt::format(
      "    {} = \"stablehlo.gather\"({}, {}) <{{dimension_numbers = #stablehlo.gather<offset_dims "
      "= [{}], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = {}>, "
      "indices_are_sorted = false, slice_sizes = array<i64: 1, {}>}}> : ({}, {}) -> {}\n",
      v.name, table.name, indices.name, rank, rank, table.dims[1], table.tensor_type(),
      indices.tensor_type(), v.tensor_type());
  return v;
}

Value Program::index_first(const Value& stacked, const Value& index) {
  expect(!stacked.dims.empty() && index.type == DType::kS32 && index.dims.empty(), "dynamic_slice",
         index);
  Dims sizes = stacked.dims;
  sizes[0] = 1;
  const Value zero = splat(0.0f, {}, DType::kS32);
  std::string starts = index.name;
  std::string start_types = index.tensor_type();
  for (std::size_t i = 1; i < stacked.dims.size(); ++i) {
    starts += ", " + zero.name;
    start_types += ", " + zero.tensor_type();
  }
  Value row = next(sizes, stacked.type);
  body_ += fmt::format("    {} = stablehlo.dynamic_slice {}, {}, sizes = [{}] : ({}, {}) -> {}\n",
                       row.name, stacked.name, starts, list(sizes), stacked.tensor_type(),
                       start_types, row.tensor_type());
  return reshape(row, Dims(stacked.dims.begin() + 1, stacked.dims.end()));
}

Value Program::index_first(const Value& stacked, std::int64_t index) {
  expect(!stacked.dims.empty(), "slice", stacked);
  Dims start(stacked.dims.size(), 0), limit = stacked.dims;
  start[0] = index;
  limit[0] = index + 1;
  return reshape(slice(stacked, start, limit), Dims(stacked.dims.begin() + 1, stacked.dims.end()));
}

std::vector<Value> Program::loop(std::int64_t trips, const std::vector<Value>& carried,
                                 const LoopBody& body) {
  // Loop-carried names: the trip index first, then the caller's values.
  std::vector<Value> args;
  args.push_back(next({}, DType::kS32));
  for (const Value& c : carried) args.push_back(next(c.dims, c.type));
  const Value start = splat(0.0f, {}, DType::kS32);
  std::string inits, types;
  for (std::size_t i = 0; i < args.size(); ++i) {
    inits += fmt::format("{}{} = {}", i ? ", " : "", args[i].name,
                         i == 0 ? start.name : carried[i - 1].name);
    types += fmt::format("{}{}", i ? ", " : "", args[i].tensor_type());
  }
  std::string outer = std::move(body_);
  body_.clear();
  const Value limit = splat(static_cast<float>(trips), {}, DType::kS32);
  const Value more = next({}, DType::kPred);
  body_ += fmt::format("    {} = stablehlo.compare LT, {}, {}, SIGNED : ({}, {}) -> {}\n",
                       more.name, args[0].name, limit.name, args[0].tensor_type(),
                       limit.tensor_type(), more.tensor_type());
  const std::string cond = std::move(body_);
  body_.clear();
  const std::vector<Value> results(body(args[0], std::vector<Value>(args.begin() + 1, args.end())));
  if (results.size() != carried.size())
    fail("internal: a loop body returned {} values, not {}", results.size(), carried.size());
  const Value one = splat(1.0f, {}, DType::kS32);
  const Value after = next({}, DType::kS32);
  body_ += fmt::format("    {} = stablehlo.add {}, {} : {}\n", after.name, args[0].name, one.name,
                       after.tensor_type());
  std::string returned = after.name;
  for (std::size_t i = 0; i < results.size(); ++i) {
    expect(results[i].dims == carried[i].dims && results[i].type == carried[i].type, "while",
           results[i]);
    returned += ", " + results[i].name;
  }
  const std::string inner = std::move(body_);
  body_ = std::move(outer);
  const std::string name = fmt::format("%v{}", counter_++);
  body_ += fmt::format(
      "    {}:{} = stablehlo.while({}) : {}\n    cond {{\n{}    stablehlo.return {} : {}\n    }} "
      "do {{\n{}    stablehlo.return {} : {}\n    }}\n",
      name, args.size(), inits, types, cond, more.name, more.tensor_type(), inner, returned, types);
  std::vector<Value> out;
  for (std::size_t i = 1; i < args.size(); ++i)
    out.push_back(Value{fmt::format("{}#{}", name, i), args[i].dims, args[i].type});
  return out;
}

std::string Program::module(const std::vector<Value>& results) const {
  std::string params, types, names;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    params +=
        fmt::format("{}{}: {}", i ? ", " : "", parameters_[i].name, parameters_[i].tensor_type());
  for (std::size_t i = 0; i < results.size(); ++i) {
    types += fmt::format("{}{}", i ? ", " : "", results[i].tensor_type());
    names += fmt::format("{}{}", i ? ", " : "", results[i].name);
  }
  return fmt::format(
      "module @mcinfer attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} "
      "{{\n  func.func public @main({}) -> ({}) {{\n{}    return {} : {}\n  }}\n}}\n",
      params, types, body_, names, types);
}

}  // namespace mcinfer::pjrt
