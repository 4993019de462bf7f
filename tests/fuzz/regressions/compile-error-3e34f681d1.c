void fz(int N, double A[N + 2][2 * N + 1][2 * N + 1], double C[1][1][N + 1]) {
  for (int i = 0; i <= N; i++) {
    for (int j = 0; j < N; j++) {
      A[j + 1][N - i][i] = 0.25 * A[i + 1][2 * j][N - i];
    }
    for (int j = 0; j < N; j++) {
      C[0][0][i] = 0.0625 * A[j][i][2 * j];
    }
  }
}
