// expect: - T=
// options: --size T=2000000000,N=16
void heat(int T, int N, double A[N], double B[N]) {
  for (int t = 0; t < T; t++) {
    for (int i = 1; i < N - 1; i++)
      B[i] = 0.33 * (A[i - 1] + A[i] + A[i + 1]);
    for (int i = 1; i < N - 1; i++)
      A[i] = B[i];
  }
}
