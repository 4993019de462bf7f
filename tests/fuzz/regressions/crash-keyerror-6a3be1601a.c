void fz(int N, int M, double A[N + 1][M + 1], double B[M + 1]) {
  for (int j = 0; j < N; j++) {
    for (int k = 0; k < M; k++) {
      A[j][k] = 0.5 * B[k];
    }
  }
}
