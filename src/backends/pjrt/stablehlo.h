#pragma once
// A small writer of StableHLO text (MLIR's textual form, the program format every PJRT plugin
// compiles): one function `main`, values in SSA form, each op checked for shapes as it is written
// so that a program we hand to a plugin is well-formed (some plugins abort on invalid input
// rather than return an error).
//
// Not thread-safe; one Program per thread while it is written.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"

namespace mcinfer::pjrt {

enum class DType { kF32, kBf16, kS32, kPred };
// As MLIR spells each element type.
inline constexpr EnumNames<DType, 4> kMlirTypeNames{{{
    {DType::kF32, "f32"},
    {DType::kBf16, "bf16"},
    {DType::kS32, "i32"},
    {DType::kPred, "i1"},
}}};

using Dims = std::vector<std::int64_t>;

std::int64_t elements(const Dims& dims);  // the product of the dimensions

struct Value {
  std::string name;  // "%arg3", "%17"
  Dims dims;
  DType type = DType::kF32;
  std::string tensor_type() const;  // "tensor<2x3xf32>"
};

class Program {
 public:
  Value parameter(Dims dims, DType type);
  // A tensor of `dims` filled with `value` (f32 written by its bits, so exactly).
  Value splat(float value, const Dims& dims, DType type = DType::kF32);
  // An f32 tensor of `dims` holding `values` (row-major; each written by its bits, so exactly).
  Value constant(const std::vector<float>& values, const Dims& dims);

  // Element-wise, same dims and type: "add", "subtract", "multiply", "divide", "maximum",
  // "minimum", "and".
  Value binary(std::string_view op, const Value& a, const Value& b);
  // "exponential", "log_plus_one", "tanh", "rsqrt", "sqrt", "negate", "logistic", "abs",
  // "cosine", "sine";
  // "erf" (chlo).
  Value unary(std::string_view op, const Value& a);
  Value convert(const Value& a, DType type);
  // `a` placed in `dims`: a's dimension i becomes dimension mapping[i].
  Value broadcast(const Value& a, const Dims& dims, const Dims& mapping);
  Value reshape(const Value& a, const Dims& dims);
  Value transpose(const Value& a, const Dims& permutation);
  Value slice(const Value& a, const Dims& start, const Dims& limit);
  // `a` with `low` and `high` entries of `value` added before and after each dimension.
  Value pad(const Value& a, float value, const Dims& low, const Dims& high);
  // The values joined along `dimension` (the others equal).
  Value concatenate(const std::vector<Value>& values, std::int64_t dimension);
  Value iota(const Dims& dims, std::int64_t dimension, DType type = DType::kS32);
  // direction: "LT", "GE", ...; ints compare SIGNED, floats FLOAT.
  Value compare(std::string_view direction, const Value& a, const Value& b);
  Value select(const Value& predicate, const Value& on_true, const Value& on_false);
  // Sums or maxima ("add" / "maximum") over `dimensions`.
  Value reduce(const Value& a, std::string_view op, const Dims& dimensions);
  // Batched matrix product: a's and b's batch dimensions pair up in order and lead the result,
  // then a's free dimensions, then b's; `result` is the element type written (f32 from bf16
  // inputs accumulates in f32).
  Value dot(const Value& a, const Value& b, const Dims& batch_a, const Dims& batch_b,
            const Dims& contract_a, const Dims& contract_b, DType result);
  // Rows of `table` [rows, width] at `indices` (any dims, s32, in range): [indices..., width].
  Value gather_rows(const Value& table, const Value& indices);
  // Entry `index` (s32 scalar, in range) of `stacked` along its first dimension: stacked[index].
  Value index_first(const Value& stacked, const Value& index);
  Value index_first(const Value& stacked, std::int64_t index);  // the same at a known index

  // A counted loop (stablehlo.while): `body` runs `trips` times with the trip's index (s32
  // scalar, from 0) and the carried values, and returns their next values (same dims and types);
  // the result is the carried values after the last trip. The body may use only what it is given
  // (values from outside are passed in as carried values, unchanged).
  using LoopBody =
      std::function<std::vector<Value>(const Value& index, const std::vector<Value>& carried)>;
  std::vector<Value> loop(std::int64_t trips, const std::vector<Value>& carried,
                          const LoopBody& body);

  // The module text, returning `results`.
  std::string module(const std::vector<Value>& results) const;

 private:
  Value next(Dims dims, DType type);
  std::vector<Value> parameters_;
  std::string body_;
  int counter_ = 0;
};

}  // namespace mcinfer::pjrt
