// expect: ok
// options: --size T=4,lambda=40 --device-mem 1KB
void jac(int T, int lambda, double A[lambda], double B[lambda]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < lambda - 1; i++)
      B[i] = 0.33333 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < lambda - 1; i++)
      A[i] = B[i];
  }
}
