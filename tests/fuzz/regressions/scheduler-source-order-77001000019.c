void fz(int N, double A[2 * N + 3], double B[N + 2], float C[N + 3], float D[N + 1], float E[N + 1][N + 1][2 * N + 1]) {
  for (int i = 0; i < N; i++) {
    for (int j = 0; j < 2; j++) {
      A[j + 1] += 0.125 * fmax(A[i + j], A[i]) + 0.0625 * A[2 * i + 1];
      B[i + 2] = 0.375 * C[2];
    }
    for (int j = max(0, i - 3); j < min(N, i + 1); j++) {
      D[i] = 0.25 * C[i] + 0.0625 * E[j][i][2 * i + 1];
    }
  }
}
