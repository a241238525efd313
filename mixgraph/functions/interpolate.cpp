#include <mixgraph/functions/interpolate.hpp>

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

namespace {

// NNabla's coordinate rules, in float as NNabla computes them, so that the
// same neighbours are chosen (interpolate.cpp: compute_scale,
// get_src_index and their _for_nn forms).
float scale_of(int64_t in, int64_t out, bool align_corners) {
  if (out <= 1) return 0.0f;
  return align_corners
             ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
             : static_cast<float>(in) / static_cast<float>(out);
}

float source_of(float scale, int64_t j, bool half_pixel) {
  const float d = static_cast<float>(j);
  return half_pixel ? std::max(0.0f, scale * (d + 0.5f) - 0.5f) : scale * d;
}

ResizedAxis resized_axis(int axis, int64_t in, int64_t out,
                         const InterpolateOptions& o) {
  ResizedAxis r;
  r.axis = axis, r.in = in, r.out = out;
  r.i0.resize(out), r.i1.resize(out), r.w.assign(out, 0.0f);
  const bool nearest = o.mode == "nearest";
  const bool nn_old = nearest && o.half_pixel_for_nn;
  const float scale = nn_old ? static_cast<float>(in) / static_cast<float>(out)
                             : scale_of(in, out, o.align_corners);
  for (int64_t j = 0; j < out; ++j) {
    const float f = nn_old ? scale * (static_cast<float>(j) + 0.5f)
                           : source_of(scale, j, o.half_pixel);
    const int64_t i = std::min(static_cast<int64_t>(f), in - 1);
    r.i0[j] = i;
    r.i1[j] = nearest ? i : std::min(i + 1, in - 1);
    if (!nearest) r.w[j] = f - static_cast<float>(i);
  }
  std::vector<std::vector<std::pair<int64_t, float>>> by_source(in);
  for (int64_t j = 0; j < out; ++j) {
    if (r.w[j] == 0.0f) {
      by_source[r.i0[j]].push_back({j, 1.0f});
    } else {
      by_source[r.i0[j]].push_back({j, 1.0f - r.w[j]});
      by_source[r.i1[j]].push_back({j, r.w[j]});
    }
  }
  r.ptr.assign(1, 0);
  for (const auto& pairs : by_source) {
    for (const auto& [j, weight] : pairs) {
      r.pair_j.push_back(j);
      r.pair_w.push_back(weight);
    }
    r.ptr.push_back(static_cast<int64_t>(r.pair_j.size()));
  }
  return r;
}

}  // namespace

void Interpolate::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const auto& size = opts_.output_size;
  const int nd = static_cast<int>(x.size());
  const int ns = static_cast<int>(size.size());
  const int last = opts_.channel_last ? nd - 1 : nd;  // one past the resized
  if (opts_.mode != "nearest" && opts_.mode != "linear") {
    throw std::invalid_argument(
        msg(tag(), "mode '", opts_.mode, "' is not one of nearest, linear"));
  }
  if (opts_.align_corners && opts_.half_pixel) {
    throw std::invalid_argument(
        msg(tag(), "align_corners and half_pixel cannot both be true"));
  }
  if (ns == 0 || ns > last) {
    throw std::invalid_argument(
        msg(tag(), "output_size ", shape_str(size), " must have ",
            (last <= 1 ? std::string("1 value")
                       : "1 to " + std::to_string(last) + " values"),
            ", one per resized axis of x with shape ", shape_str(x),
            (opts_.channel_last ? " (channel_last)" : "")));
  }
  Shape y = x;
  axes_.clear();
  for (int i = 0; i < ns; ++i) {
    const int a = last - ns + i;
    if (size[i] <= 0) {
      throw std::invalid_argument(
          msg(tag(), "output_size ", shape_str(size), " must be positive"));
    }
    if (x[a] == 0) {
      throw std::invalid_argument(msg(
          tag(), "x with shape ", shape_str(x), " is empty along axis ", a,
          ", which output_size ", shape_str(size), " resizes to ", size[i]));
    }
    y[a] = size[i];
    axes_.push_back(resized_axis(a, x[a], size[i], opts_));
  }
  out[0]->reshape(y);
}

namespace functions {

VariablePtr interpolate(const VariablePtr& x, std::vector<int64_t> output_size,
                        const std::string& mode, bool align_corners,
                        bool half_pixel, bool half_pixel_for_nn,
                        bool channel_last) {
  return apply_function1(
      decl::Interpolate,
      InterpolateOptions{std::move(output_size), mode, align_corners,
                         half_pixel, half_pixel_for_nn, channel_last},
      {x});
}

}  // namespace functions

}  // namespace mg
