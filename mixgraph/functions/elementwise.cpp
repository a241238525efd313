#include <mixgraph/functions/elementwise.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

BroadcastPlan broadcast_plan(const Shape& a, const Shape& b,
                             const std::string& tag) {
  const int nd = static_cast<int>(std::max(a.size(), b.size()));
  BroadcastPlan p;
  p.out_shape.assign(nd, 1);
  Shape pa(nd, 1), pb(nd, 1);
  std::copy(a.begin(), a.end(), pa.begin() + (nd - a.size()));
  std::copy(b.begin(), b.end(), pb.begin() + (nd - b.size()));
  for (int i = 0; i < nd; ++i) {
    if (pa[i] != pb[i] && pa[i] != 1 && pb[i] != 1) {
      throw std::invalid_argument(
          msg(tag, "x0 with shape ", shape_str(a), " and x1 with shape ",
              shape_str(b), " cannot broadcast: axis ", i,
              " (aligned on the right) is ", pa[i], " against ", pb[i],
              "; each must match or be 1"));
    }
    p.out_shape[i] = pa[i] == 1 ? pb[i] : pa[i];
  }
  const auto sa = shape_strides(pa), sb = shape_strides(pb);
  p.stride0.resize(nd);
  p.stride1.resize(nd);
  for (int i = 0; i < nd; ++i) {
    p.stride0[i] = (pa[i] == 1 && p.out_shape[i] != 1) ? 0 : sa[i];
    p.stride1[i] = (pb[i] == 1 && p.out_shape[i] != 1) ? 0 : sb[i];
  }
  return p;
}

}  // namespace mg
