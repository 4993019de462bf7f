void fz(int N, int K, float A[N + 3][K + N + 1][K + 2 * N + 1]) {
  for (int i = 0; i < K; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < N; k++) {
        A[k][k][i - k + N] = 0.0625 * A[2][j + k][k + N];
      }
    }
  }
}
