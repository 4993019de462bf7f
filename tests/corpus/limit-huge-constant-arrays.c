// expect: - its constant sizes
// options: --target emulator
void f(double A[100000][100000]) {
  for (int i = 0; i < 100000; i++)
    for (int j = 0; j < 100000; j++)
      A[i][j] = 1.0;
}
