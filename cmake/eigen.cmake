# Eigen (Debian: libeigen3-dev, header-only): the batched linear algebra
# kernels (BatchInv, BatchDet, BatchLogdet, BatchCholesky) use its LU, SVD
# and Cholesky decompositions in double. Linked privately: no public header
# includes Eigen, so users of the library never need it.
find_package(Eigen3 3.3 REQUIRED NO_MODULE)
target_link_libraries(mixgraph PRIVATE Eigen3::Eigen)
