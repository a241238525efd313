// Fashion-MNIST as Debian's dataset-fashion-mnist installs it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mg {

/// Images with one class label each, as unsigned bytes.
struct ImageDataset {
  std::vector<uint8_t> images;  // (size, height, width), row-major
  std::vector<uint8_t> labels;  // (size,), each < classes
  int64_t size = 0, height = 0, width = 0;
  int classes = 0;
};

/// The folder dataset-fashion-mnist installs to
/// (/usr/share/datasets/fashion-mnist), or $MIXGRAPH_FASHION_MNIST_DIR when
/// set.
std::string default_fashion_mnist_dir();

/// True when the four Fashion-MNIST files are in `dir` ("" is the default).
bool fashion_mnist_available(const std::string& dir = "");

/// The "train" (60,000 images) or "test" (10,000) split of Fashion-MNIST
/// from `dir` ("" is the default): files `<prefix>-images-idx3-ubyte[.gz]`
/// and `<prefix>-labels-idx1-ubyte[.gz]`, prefix "train" or "t10k". A missing
/// file is a std::invalid_argument naming it and saying `apt-get install
/// dataset-fashion-mnist`; inconsistent files name the file.
ImageDataset load_fashion_mnist(const std::string& split,
                                const std::string& dir = "");

}  // namespace mg
