void fz(int N, double B[N + 2]) {
  for (int i = N - 1; i >= 1; i--)
    B[i + 1] = 0.5 * B[i];
}
