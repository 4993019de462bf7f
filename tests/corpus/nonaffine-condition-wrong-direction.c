// expect: 4:19 upper
// options: --size N=8
void f(int N, double A[N], double B[N]) {
  for (int i = 0; i > N; i++)
    B[0] = A[0];
}
