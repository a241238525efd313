// The library's random number generator (initializers, dropout).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace mg {

/// The global generator. Seed it with mg::seed for reproducible runs.
std::mt19937& random_engine();
/// Reseeds the global generator.
void seed(uint64_t seed);
/// The generator's full state as text, and back (for checkpoints).
std::string random_state();
void set_random_state(const std::string& state);

}  // namespace mg
