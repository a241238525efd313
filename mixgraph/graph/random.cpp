#include <mixgraph/graph/random.hpp>

#include <sstream>
#include <stdexcept>

namespace mg {

std::mt19937& random_engine() {
  static std::mt19937 engine(313);  // NNabla's default seed
  return engine;
}

void seed(uint64_t s) { random_engine().seed(static_cast<uint32_t>(s)); }

std::string random_state() {
  std::ostringstream os;
  os << random_engine();
  return os.str();
}

void set_random_state(const std::string& state) {
  std::istringstream is(state);
  std::mt19937 engine;
  is >> engine;
  if (is.fail()) {
    throw std::invalid_argument(
        "[set_random_state] the text is not a saved generator state");
  }
  random_engine() = engine;
}

}  // namespace mg
