// The main of every test under tests/mpi/ (run by mpirun): GoogleTest on
// every rank; rank 0 prints the run, the others print only their failures,
// and each rank exits non-zero when a test failed there (mpirun then fails).
#include <gtest/gtest.h>

#include <cstdio>

#include <mixgraph/contexts/communicator.hpp>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = mg::mpi_communicator();
  if (comm->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    struct Failures : ::testing::EmptyTestEventListener {
      int rank;
      explicit Failures(int r) : rank(r) {}
      void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed()) {
          std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank, r.file_name(),
                       r.line_number(), r.summary());
        }
      }
    };
    listeners.Append(new Failures(comm->rank()));
  }
  return RUN_ALL_TESTS();
}
