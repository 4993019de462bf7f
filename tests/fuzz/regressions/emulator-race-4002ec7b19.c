void fz(int N, float D[N + 1], double E[1][1]) {
  for (int j = 0; j < N; j++) {
    for (int k = 0; k < N; k++) {
      for (int l = 1; l < k; l++) {
        D[j] += 0.0625 * E[0][0];
      }
    }
  }
}
