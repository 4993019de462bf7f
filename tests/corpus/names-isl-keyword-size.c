// expect: 3:21 isl
// options: --size T=2,min=8
void jac(int T, int min, double A[min], double B[min]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < min - 1; i++)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < min - 1; i++)
      A[i] = B[i];
  }
}
