// expect: ok
// options: --size N=8,M=0
void f(int N, int M, double A[N], double B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] + (double)N / (M + 1);
}
