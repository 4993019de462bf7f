void fz(int N, int M, double alpha, double beta, double A[N + 5][M + 2 * N + 1], double B[M + 1][N + 1][M + 1], int C[N + 1][2 * M + N + 1][M + N + 2], int D[N + 1][2], float E[N + 2][3]) {
  for (int i = 1 - 1; i >= 0; i--) {
    for (int j = 1; j < N; j++) {
      for (int k = 0; k <= M - 1; k++) {
        for (int l = 1; l <= N - 1; l++) {
          if ((i) % 2 == 1) {
            A[l + 3][j] = 0.0625 * A[l - 1][2 * j] + 0.375 * A[l + 5][j] + 0.0625 * A[l + 2][j];
          }
        }
      }
    }
  }
  for (int i = 0; i < M; i += 2) {
    for (int j = i; j < M; j++) {
      for (int k = 0; k < N; k++) {
        if (j >= 3 && (i) % 2 == 1) {
          A[k + 1][0] = 0.0625 * B[i][k][j] * alpha + 0.125 * A[k][i + 1] * beta;
        }
      }
    }
  }
  for (int i = 0; i <= N - 1; i++) {
    for (int j = 0; j < i; j++) {
      for (int k = 0; k < N; k++) {
        for (int l = max(0, i - 3); l < min(M, i + 1); l++) {
          C[N - j - 1][k + l + M + 1][l - k + N] = (C[i][k - l + M + 1][N + 1] + C[i][j + M][l + N + 2] + D[i][1]) / 3;
        }
      }
    }
  }
  for (int i = N - 1; i >= 0; i--) {
    E[i + 2][2] = 0.25 * fmin(E[i + 2][0], E[i + 2][0]) + 0.0625;
  }
}
