// expect: ok
// options: --size T=3,launch=33
// via: magic
void jac(int T, int launch, double A[launch], double B[launch]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < launch - 1; i++)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < launch - 1; i++)
      A[i] = B[i];
  }
}
