#include <mixgraph/utils/data/fashion_mnist.hpp>

#include <sys/stat.h>

#include <cstdlib>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/utils/data/idx.hpp>

namespace mg {

namespace {

bool is_file(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string resolve_dir(const std::string& dir) {
  return dir.empty() ? default_fashion_mnist_dir() : dir;
}

// The .gz file Debian installs, or the same file uncompressed.
std::string find_file(const std::string& dir, const std::string& name,
                      bool report) {
  const std::string gz = dir + "/" + name + ".gz";
  if (is_file(gz)) return gz;
  if (is_file(dir + "/" + name)) return dir + "/" + name;
  if (!report) return "";
  throw std::invalid_argument(msg(
      "[load_fashion_mnist] ", gz, " does not exist (nor ", name,
      " without .gz): install the data set with "
      "`apt-get install dataset-fashion-mnist`, or point "
      "MIXGRAPH_FASHION_MNIST_DIR (or --data-dir) at a folder that has it"));
}

std::string prefix_of(const std::string& split) {
  if (split == "train") return "train";
  if (split == "test") return "t10k";
  throw std::invalid_argument(
      msg("[load_fashion_mnist] split must be \"train\" "
          "or \"test\", got \"",
          split, "\""));
}

}  // namespace

std::string default_fashion_mnist_dir() {
  const char* env = std::getenv("MIXGRAPH_FASHION_MNIST_DIR");
  return env && *env ? env : "/usr/share/datasets/fashion-mnist";
}

bool fashion_mnist_available(const std::string& dir) {
  const std::string d = resolve_dir(dir);
  for (const char* prefix : {"train", "t10k"}) {
    const std::string p = prefix;
    if (find_file(d, p + "-images-idx3-ubyte", false).empty() ||
        find_file(d, p + "-labels-idx1-ubyte", false).empty()) {
      return false;
    }
  }
  return true;
}

ImageDataset load_fashion_mnist(const std::string& split,
                                const std::string& dir) {
  const std::string prefix = prefix_of(split);
  const std::string d = resolve_dir(dir);
  const std::string image_path =
      find_file(d, prefix + "-images-idx3-ubyte", true);
  const std::string label_path =
      find_file(d, prefix + "-labels-idx1-ubyte", true);
  IdxArray images = read_idx(image_path);
  IdxArray labels = read_idx(label_path);
  if (images.shape.size() != 3) {
    throw std::invalid_argument(
        msg("[load_fashion_mnist] ", image_path,
            ": images must have shape (N, rows, cols), got ",
            shape_str(images.shape)));
  }
  if (labels.shape.size() != 1 || labels.shape[0] != images.shape[0]) {
    throw std::invalid_argument(
        msg("[load_fashion_mnist] ", label_path, ": labels with shape ",
            shape_str(labels.shape), " do not match the ", images.shape[0],
            " images of ", image_path));
  }
  ImageDataset ds;
  ds.classes = 10;
  for (size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= ds.classes) {
      throw std::invalid_argument(
          msg("[load_fashion_mnist] ", label_path, ": label ",
              std::to_string(labels.data[i]), " at index ", i,
              " is not a class in [0, 10)"));
    }
  }
  ds.size = images.shape[0];
  ds.height = images.shape[1];
  ds.width = images.shape[2];
  ds.images = std::move(images.data);
  ds.labels = std::move(labels.data);
  return ds;
}

}  // namespace mg
