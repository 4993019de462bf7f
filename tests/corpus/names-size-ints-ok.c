// expect: ok
// options: --size T=3,ints=33 --target openmp
void jac(int T, int ints, double A[ints], double B[ints]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < ints - 1; i++)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < ints - 1; i++)
      A[i] = B[i];
  }
}
