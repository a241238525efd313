# Eigen (Debian: libeigen3-dev, header-only): the batched linear algebra
# kernels (BatchInv, BatchDet, BatchLogdet, BatchCholesky) use its LU, SVD
# and Cholesky decompositions in double. Its include directory is given to
# the one source that uses it (no other file's flags change, so no rebuild of
# the rest); no public header includes Eigen, so users never need it.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
get_target_property(MIXGRAPH_EIGEN_INCLUDE_DIRS Eigen3::Eigen
                    INTERFACE_INCLUDE_DIRECTORIES)
set_source_files_properties(
  ${CMAKE_SOURCE_DIR}/mixgraph/functions/cpu/batch_linalg.cpp
  PROPERTIES INCLUDE_DIRECTORIES "${MIXGRAPH_EIGEN_INCLUDE_DIRS}")
