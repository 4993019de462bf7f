// expect: ok
// options: --size T=4,N=40 --localise t
void jac(int T, int N, double lc0_A[N], double lc0_B[N]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < N - 1; i++)
      lc0_B[i] = 0.33333 * (lc0_A[i - 1] + lc0_A[i] + lc0_A[i + 1]);
    for (int i = 1; i < N - 1; i++)
      lc0_A[i] = lc0_B[i];
  }
}
