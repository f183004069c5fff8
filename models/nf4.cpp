// TEMPORARY placeholder while the NF4 implementation is written on its branch; not committed.
#include "models/nf4.h"
#include "common/error.h"
namespace citeforge::models {
int64_t Nf4Weight::bytes() const { return 0; }
Nf4Weight nf4_quantize(const torch::Tensor&, int64_t) { throw Error("nf4 placeholder"); }
torch::Tensor nf4_dequantize(const Nf4Weight&, torch::Dtype) { throw Error("nf4 placeholder"); }
}
